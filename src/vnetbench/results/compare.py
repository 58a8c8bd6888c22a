"""Compare two runs group by group and decide whether B regressed against A.

For every (metric, layer, nodes, hosts, workload) group present in both runs the change is
median(B) / median(A) with a bootstrap interval. A change is *called* only when it is beyond
the tolerance (a factor of 1 + tolerance either way) and significant (interval excludes 1).
Whether a called change is a regression depends on the metric's direction: lower is better
for latencies, times and CPU costs; higher is better for tps, goodput and other rates.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vnetbench.results.model import Sample
from vnetbench.results.stats import (
    DEFAULT_SEED,
    Direction,
    Interval,
    better_direction,
    condition_keys,
    group_samples,
    median,
    ratio_of_medians,
)
from vnetbench.results.store import RunData, load_run

RunLike = RunData | Sequence[Sample] | str | os.PathLike[str]


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

    @property
    def called(self) -> bool:
        return self.significant and self.beyond_tolerance

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
        return "same"

    def describe(self) -> str:
        where = " ".join(f"{k}={v}" for k, v in self.labels.items())
        return (f"{self.metric} [{where}] {self.median_a:.4g} -> {self.median_b:.4g} {self.unit} "
                f"x{self.ratio:.3f} {self.ci} {self.verdict}")


def _samples(run: RunLike) -> list[Sample]:
    if isinstance(run, RunData):
        return run.samples
    if isinstance(run, str | os.PathLike):
        return load_run(Path(run)).samples
    return list(run)


def compare(run_a: RunLike, run_b: RunLike, tolerance: float = 0.05, *,
            group_by: Sequence[str] | None = None, confidence: float = 0.95,
            seed: int = DEFAULT_SEED) -> list[Change]:
    """Changes from ``run_a`` (reference) to ``run_b`` for every group present in both.

    By default a group is every label except the replicate ones (repetition, trial), so
    sweep axes and collector places (netns, device, cpu) are never pooled together.
    """
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    factor = 1.0 + tolerance
    samples_a, samples_b = _samples(run_a), _samples(run_b)
    if group_by is None:
        group_by = condition_keys([*samples_a, *samples_b])
    groups_a = group_samples(samples_a, group_by)
    groups_b = group_samples(samples_b, group_by)
    changes: list[Change] = []
    metric_pos = list(group_by).index("metric") if "metric" in group_by else None
    for key in sorted(set(groups_a) & set(groups_b)):
        a, b = groups_a[key], groups_b[key]
        metric = key[metric_pos] if metric_pos is not None else a[0].metric
        ratio = ratio_of_medians([s.value for s in b], [s.value for s in a],
                                 confidence=confidence, seed=seed)
        labels = {k: v for k, v in zip(group_by, key, strict=True) if v and k != "metric"}
        changes.append(Change(
            labels=labels, metric=metric, unit=a[0].unit,
            median_a=median(s.value for s in a), median_b=median(s.value for s in b),
            ratio=ratio.value, ci=ratio.ci, n_a=ratio.n_baseline, n_b=ratio.n,
            direction=better_direction(metric, a[0].unit),
            significant=ratio.significant, beyond_tolerance=ratio.beyond(factor),
        ))
    return changes


def exit_code(changes: Iterable[Change]) -> int:
    """Process exit code for ``vnetbench compare``: 1 if any regression beyond tolerance, else 0."""
    return 1 if any(c.regression for c in changes) else 0


def format_changes(changes: Iterable[Change], only_called: bool = False) -> str:
    """A plain-text table of changes, regressions first."""
    rows = sorted(changes, key=lambda c: (not c.regression, not c.called, c.metric))
    if only_called:
        rows = [c for c in rows if c.called]
    return "\n".join(c.describe() for c in rows)
