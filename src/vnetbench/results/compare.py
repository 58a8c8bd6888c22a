"""Compare two runs group by group and decide whether B regressed against A.

For every group (every condition label but the replicate ones) present in both runs the
change is median(B) / median(A), with a bootstrap interval for display. The rule is the one
the report uses for layers: a change is *called* only when it is beyond the tolerance and
beyond the noise floor (the larger of the two runs' A/A floors for that metric, when they
measured one), and significant by the exact permutation test. Where the repetitions are too
few for the test ever to be significant (3 vs 3), the change is *not judged* and says so.
Whether a called change is a regression depends on the metric's direction: lower is better
for latencies, times and CPU costs; higher is better for tps, goodput and other rates.

By default only workload results are judged; collector evidence (per-core CPU, per-device
counters) changes with every throughput change and is compared only when asked.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vnetbench.results.model import Sample
from vnetbench.results.stats import (
    AA_LABEL,
    DEFAULT_SEED,
    Direction,
    Interval,
    NoiseFloor,
    better_direction,
    condition_keys,
    group_samples,
    median,
    noise_floor,
    ratio_of_medians,
)
from vnetbench.results.store import RunData, load_run

RunLike = RunData | Sequence[Sample] | str | os.PathLike[str]
BASELINE = "host"


@dataclass(frozen=True)
class Change:
    """How one group changed from run A to run B."""

    labels: dict[str, str]
    metric: str
    unit: str
    median_a: float
    median_b: float
    ratio: float
    ci: Interval
    n_a: int
    n_b: int
    direction: Direction | None
    significant: bool
    beyond_tolerance: bool
    p_value: float = math.nan
    floor: float = math.nan
    """The larger A/A noise floor of the two runs for this metric (nan: none measured)."""
    beyond_floor: bool = True
    judgeable: bool = True
    """Enough repetitions on both sides for the test ever to be significant."""

    @property
    def called(self) -> bool:
        return self.significant and self.beyond_tolerance and self.beyond_floor

    @property
    def worse(self) -> bool:
        if self.direction is None or math.isnan(self.ratio):
            return False
        return self.ratio > 1.0 if self.direction == "lower" else self.ratio < 1.0

    @property
    def regression(self) -> bool:
        """Called and in the bad direction."""
        return self.called and self.worse

    @property
    def improvement(self) -> bool:
        return self.called and self.direction is not None and not self.worse

    @property
    def verdict(self) -> str:
        if self.regression:
            return "REGRESSION"
        if self.improvement:
            return "improved"
        if self.called:
            return "changed"
        if not self.judgeable:
            return "not judged"
        if self.beyond_tolerance:
            return "not resolved"
        return "same"

    def describe(self) -> str:
        where = " ".join(f"{k}={v}" for k, v in self.labels.items())
        floor = "" if math.isnan(self.floor) else f" floor {self.floor:.1%}"
        p = "" if math.isnan(self.p_value) else f" p={self.p_value:.3f}"
        return (f"{self.metric} [{where}] {self.median_a:.4g} -> {self.median_b:.4g} {self.unit} "
                f"x{self.ratio:.3f} {self.ci}{p}{floor} n={self.n_a}/{self.n_b} {self.verdict}")


def _samples(run: RunLike) -> list[Sample]:
    if isinstance(run, RunData):
        return run.samples
    if isinstance(run, str | os.PathLike):
        return load_run(Path(run)).samples
    return list(run)


def _floors(samples: Sequence[Sample], group_by: Sequence[str], seed: int
            ) -> dict[tuple[str, ...], NoiseFloor]:
    """The baseline's A/A floor per group key with the layer left blank."""
    if "layer" not in group_by:
        return {}
    layer_pos = list(group_by).index("layer")
    base = [s for s in samples if s.labels.get("layer") == BASELINE and AA_LABEL in s.labels]
    out: dict[tuple[str, ...], NoiseFloor] = {}
    for key, members in group_samples(base, group_by).items():
        floor = noise_floor(members, seed=seed)
        if floor is not None:
            out[(*key[:layer_pos], "", *key[layer_pos + 1:])] = floor
    return out


def compare(run_a: RunLike, run_b: RunLike, tolerance: float = 0.05, *,
            group_by: Sequence[str] | None = None, confidence: float = 0.95,
            seed: int = DEFAULT_SEED, include_evidence: bool = False) -> list[Change]:
    """Changes from ``run_a`` (reference) to ``run_b`` for every group present in both.

    By default a group is every label except the replicate ones (repetition, trial, A/A
    group), so sweep axes are never pooled together; collector samples are left out unless
    ``include_evidence``.
    """
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    factor = 1.0 + tolerance
    samples_a, samples_b = _samples(run_a), _samples(run_b)
    if not include_evidence:
        samples_a = [s for s in samples_a if not s.is_evidence]
        samples_b = [s for s in samples_b if not s.is_evidence]
    if group_by is None:
        group_by = condition_keys([*samples_a, *samples_b])
    groups_a = group_samples(samples_a, group_by)
    groups_b = group_samples(samples_b, group_by)
    floors_a, floors_b = _floors(samples_a, group_by, seed), _floors(samples_b, group_by, seed)
    layer_pos = list(group_by).index("layer") if "layer" in group_by else None
    changes: list[Change] = []
    metric_pos = list(group_by).index("metric") if "metric" in group_by else None
    for key in sorted(set(groups_a) & set(groups_b)):
        a, b = groups_a[key], groups_b[key]
        metric = key[metric_pos] if metric_pos is not None else a[0].metric
        ratio = ratio_of_medians([s.value for s in b], [s.value for s in a],
                                 confidence=confidence, seed=seed)
        labels = {k: v for k, v in zip(group_by, key, strict=True) if v and k != "metric"}
        floor = math.nan
        if layer_pos is not None:
            blank = (*key[:layer_pos], "", *key[layer_pos + 1:])
            found = [f.floor for f in (floors_a.get(blank), floors_b.get(blank))
                     if f is not None and not math.isnan(f.floor)]
            floor = max(found) if found else math.nan
        changes.append(Change(
            labels=labels, metric=metric, unit=a[0].unit,
            median_a=median(s.value for s in a), median_b=median(s.value for s in b),
            ratio=ratio.value, ci=ratio.ci, n_a=ratio.n_baseline, n_b=ratio.n,
            direction=better_direction(metric, a[0].unit),
            significant=ratio.significant, beyond_tolerance=ratio.beyond(factor),
            p_value=ratio.p_value, floor=floor,
            beyond_floor=math.isnan(floor) or ratio.beyond(1.0 + floor),
            judgeable=ratio.resolvable,
        ))
    return changes


def exit_code(changes: Iterable[Change]) -> int:
    """Process exit code for ``vnetbench compare``: 1 if any regression beyond tolerance, else 0."""
    return 1 if any(c.regression for c in changes) else 0


def summary_line(changes: Sequence[Change]) -> str:
    """How many groups were judged, and what came of them."""
    judged = [c for c in changes if c.judgeable]
    counts = {v: sum(1 for c in judged if c.verdict == v)
              for v in ("REGRESSION", "improved", "changed", "not resolved", "same")}
    text = (f"{len(judged)} of {len(changes)} groups judged: {counts['REGRESSION']} regression(s), "
            f"{counts['improved']} improved, {counts['changed']} changed, "
            f"{counts['not resolved']} not resolved (within noise), {counts['same']} same")
    unjudged = len(changes) - len(judged)
    if unjudged:
        few = min((c for c in changes if not c.judgeable), key=lambda c: min(c.n_a, c.n_b))
        text += (f"; {unjudged} not judged (too few repetitions, e.g. {few.n_a} vs {few.n_b}: "
                 "no split of so few can be significant; repeat 4 or more)")
    return text


def format_changes(changes: Iterable[Change], only_called: bool = False) -> str:
    """A plain-text table of changes, regressions first."""
    rows = sorted(changes, key=lambda c: (not c.regression, not c.called, c.metric))
    if only_called:
        rows = [c for c in rows if c.called]
    return "\n".join(c.describe() for c in rows)
