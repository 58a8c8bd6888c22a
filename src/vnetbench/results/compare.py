"""Compare two runs group by group and decide whether B regressed against A.

For every group (every condition label but the replicate ones) present in both runs the
change is median(B) / median(A), with a bootstrap interval for display. Where both runs
measured a layer paired with its baseline (``pair`` labels), the layer's group compares its
*cost* instead: its ratio to the baseline of its own run, B's over A's (labelled
``compared=ratio to host``), so a machine that is slower in the second run as a whole (the
baseline with it) is not a regression of every layer; the baseline's own groups are compared
as values, as before. The rule is the one the report uses for layers: a change is *called*
only when it is beyond the tolerance and
beyond the noise floor (the larger of the two runs' A/A floors for that metric, when they
measured one), and significant by the exact permutation test. Where the repetitions are too
few for the test ever to be significant (3 vs 3), the change is *not judged* and says so.
Whether a called change is a regression depends on the metric's direction: lower is better
for latencies, times and CPU costs; higher is better for tps, goodput and other rates.

By default only the main workload results are judged (``MAIN_METRICS``: what the report's
headline is made of); secondary numbers and collector evidence (per-core CPU, per-device
counters) are compared only when asked (``include_evidence``, ``--all-metrics``): judged by
the hundred at 5% each, some would be called by chance alone. The floor of a group is the
larger of the runs' A/A floors for its metric and the resolution its own spread allows.
``trial_failed`` markers are not measurements and are never compared as a metric.

A group *collapsed* when one run has zero, nan or inf values where the other had finite,
non-zero ones (a rate of 0, a latency of nan): its ratio (x0.000, xnan) means nothing, so its
verdict is COLLAPSED. A zero counts only where it cannot be a measured value: for evidence
counters and counts of bad events (drops, losses, retransmits, errors) zero is normal.

:func:`gate` is what ``vnetbench compare`` runs: the changes plus everything that makes a
comparison untrustworthy, each of which fails the gate unless allowed (``GATE_KINDS``):

    missing     groups of A with no result in B (and no failed trial of B to explain them)
    failed      failed trials (``trial_failed`` samples) in A or B
    incomplete  a run whose status is not complete (killed, cut short, failed at a stage)
    collapsed   groups with zero, nan or inf values (see above)
    unjudged    groups with too few repetitions to be judged, or no group in common at all

A regression always fails the gate.

``metrics`` and ``workloads`` (``--metric``, ``--workload``) narrow what is judged to the
samples whose metric matches one of the glob patterns (``rtt_p*_us``) and whose ``workload``
label is one of those named; a metric named this way is judged even when it is not a
headline one. Failed trials and a run's status still count: a broken run stays broken. A
filter that matches no sample of either run is a ``VnetbenchError`` (a typo must not pass a
gate by comparing nothing). ``Gate.to_dict`` is the gate as JSON-ready data
(``compare --json``).
"""

from __future__ import annotations

import fnmatch
import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vnetbench.errors import VnetbenchError
from vnetbench.results.contention import outside_shares
from vnetbench.results.metrics import MAIN_METRICS
from vnetbench.results.model import PAIR_LABEL, Sample
from vnetbench.results.stats import (
    AA_LABEL,
    DEFAULT_SEED,
    REPLICATE_LABELS,
    Direction,
    Interval,
    LayerRatio,
    NoiseFloor,
    Ratio,
    better_direction,
    condition_keys,
    group_samples,
    median,
    noise_floor,
    ratio_of_medians,
    ratios_to_baseline,
    resolution,
)
from vnetbench.results.store import RunData, RunStatus, load_run

RunLike = RunData | Sequence[Sample] | str | os.PathLike[str]
BASELINE = "host"
TRIAL_FAILED = "trial_failed"
"""The metric of the marker sample the runner writes for a trial that failed."""


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
    collapse: str = ""
    """What collapsed (e.g. "B: 7 of 7 values zero"); empty when nothing did."""

    @property
    def collapsed(self) -> bool:
        """A run has zero, nan or inf values where the other had finite non-zero ones."""
        return bool(self.collapse)

    @property
    def judged(self) -> bool:
        """Counted as judged: enough repetitions, and numbers a ratio can be taken of."""
        return self.judgeable and not self.collapsed

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
        if self.collapsed:
            return "COLLAPSED"
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

    def to_dict(self) -> dict[str, object]:
        """The change as JSON-ready data (nan as None)."""
        return {"metric": self.metric, "unit": self.unit, "labels": dict(self.labels),
                "median_a": _finite(self.median_a), "median_b": _finite(self.median_b),
                "ratio": _finite(self.ratio), "ci": [_finite(self.ci.low), _finite(self.ci.high)],
                "confidence": self.ci.confidence, "n_a": self.n_a, "n_b": self.n_b,
                "direction": self.direction, "p_value": _finite(self.p_value),
                "floor": _finite(self.floor), "verdict": self.verdict, "called": self.called,
                "regression": self.regression, "judged": self.judged,
                "collapse": self.collapse or None}

    def describe(self) -> str:
        where = " ".join(f"{k}={v}" for k, v in self.labels.items())
        floor = "" if math.isnan(self.floor) else f" floor {self.floor:.1%}"
        p = "" if math.isnan(self.p_value) else f" p={self.p_value:.3f}"
        return (f"{self.metric} [{where}] {self.median_a:.4g} -> {self.median_b:.4g} {self.unit} "
                f"x{self.ratio:.3f} {self.ci}{p}{floor} n={self.n_a}/{self.n_b} {self.verdict}"
                + (f" ({self.collapse})" if self.collapsed else ""))


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class SampleFilter:
    """Which samples a comparison judges: metrics matching one of ``metrics`` (glob
    patterns) and with a ``workload`` label among ``workloads``; empty: no restriction."""

    metrics: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.metrics or self.workloads)

    def keeps(self, sample: Sample) -> bool:
        return ((not self.metrics or any(fnmatch.fnmatchcase(sample.metric, pattern)
                                         for pattern in self.metrics))
                and (not self.workloads or sample.labels.get("workload") in self.workloads))

    def check(self, samples: Sequence[Sample]) -> None:
        """VnetbenchError naming what exists when a filter matches no sample at all."""
        measured = [s for s in samples if s.metric != TRIAL_FAILED]
        for pattern in self.metrics:
            if not any(fnmatch.fnmatchcase(s.metric, pattern) for s in measured):
                known = sorted({s.metric for s in measured if not s.is_evidence})
                raise VnetbenchError(f"--metric {pattern!r} matches no metric of either run; "
                                     f"they have: {_examples(known, 12)}")
        for name in self.workloads:
            if not any(s.labels.get("workload") == name for s in measured):
                known = sorted({s.labels["workload"] for s in measured if "workload" in s.labels})
                raise VnetbenchError(f"--workload {name!r} is not a workload of either run; "
                                     f"they have: {', '.join(known) or 'none'}")


def _load(run: RunLike) -> tuple[list[Sample], RunData | None]:
    """The run's samples, and the run itself when it was given as one (or as a directory)."""
    if isinstance(run, RunData):
        return run.samples, run
    if isinstance(run, str | os.PathLike):
        data = load_run(Path(run))
        return data.samples, data
    return list(run), None


def _samples(run: RunLike) -> list[Sample]:
    return _load(run)[0]


_ZERO_IS_NORMAL = ("loss", "lost", "drop", "retrans", "err", "overflow", "timeout", "fail",
                   "cpu")
"""Metric names whose zero is a measured value (no bad events; CPU seconds of a short trial
that rounded to 0), not a collapse."""


def _collapse(values_a: Sequence[float], values_b: Sequence[float], zero_is_bad: bool) -> str:
    """Which run collapsed against the other, e.g. "B: 7 of 7 values zero"; "" if neither."""
    def bad(values: Sequence[float]) -> list[float]:
        return [v for v in values if not math.isfinite(v) or (zero_is_bad and v == 0.0)]

    def describe(name: str, values: Sequence[float], bad_values: list[float]) -> str:
        kinds = Counter("nan" if math.isnan(v) else "inf" if math.isinf(v) else "zero"
                        for v in bad_values)
        return f"{name}: {len(bad_values)} of {len(values)} values " + "/".join(sorted(kinds))

    bad_a, bad_b = bad(values_a), bad(values_b)
    parts = []
    for name, values, bad_here, other, bad_other in (
            ("A", values_a, bad_a, values_b, bad_b), ("B", values_b, bad_b, values_a, bad_a)):
        if bad_here and (not bad_other or (len(bad_here) == len(values)
                                           and len(bad_other) < len(other))):
            parts.append(describe(name, values, bad_here))
    return "; ".join(parts)


def _zero_is_bad(sample: Sample) -> bool:
    """Whether a zero of this (group's) metric means nothing was measured."""
    return not sample.is_evidence and not any(w in sample.metric.lower() for w in _ZERO_IS_NORMAL)


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


@dataclass
class _Comparison:
    changes: list[Change]
    missing: list[dict[str, str]]
    """Groups of A with no samples in B (labels, with ``metric``)."""


def _group_labels(group_by: Sequence[str], key: tuple[str, ...]) -> dict[str, str]:
    return {k: v for k, v in zip(group_by, key, strict=True) if v}


def _layer_costs(samples: Sequence[Sample], group_by: Sequence[str], seed: int
                 ) -> dict[tuple[str, ...], LayerRatio]:
    """Each layer's paired ratio to its own run's baseline, by the group key (empty unless
    the run measured the layer and its baseline in a paired design)."""
    if "layer" not in group_by or "metric" not in group_by or not any(
            PAIR_LABEL in s.labels for s in samples):
        return {}
    rest = [k for k in group_by if k != "layer"]
    out: dict[tuple[str, ...], LayerRatio] = {}
    for lr in ratios_to_baseline(samples, baseline=BASELINE, group_by=rest, seed=seed,
                                 shares=outside_shares(samples)):
        if lr.ratio.design == "unpaired":
            continue
        labels = {**lr.labels, "layer": lr.layer, "metric": lr.metric}
        out[tuple(labels.get(k, "") for k in group_by)] = lr
    return out


def _cost_change(a: LayerRatio, b: LayerRatio, group_by: Sequence[str], key: tuple[str, ...],
                 factor: float) -> Change:
    """How a layer's cost (its ratio to the baseline measured in the same seconds) changed
    between two paired runs: the machine's own drift between the runs cancels, as it does
    within each. Called when the ratios' intervals do not overlap and the change is beyond
    the tolerance and the larger of the runs' A/A floors."""
    ra, rb = a.ratio, b.ratio
    change = rb.value / ra.value if ra.value > 0 else math.nan
    ci = Interval(rb.ci.low / ra.ci.high if ra.ci.high > 0 else math.nan,
                  rb.ci.high / ra.ci.low if ra.ci.low > 0 else math.nan, ra.ci.confidence)
    floors = [f for f in (a.floor, b.floor) if not math.isnan(f)]
    floor = max(floors) if floors else math.nan
    labels = {k: v for k, v in _group_labels(group_by, key).items() if k != "metric"}
    beyond = Ratio(change, ci, rb.n, ra.n).beyond  # the report's rule: either way, in log
    return Change(
        labels={**labels, "compared": "ratio to host"}, metric=a.metric, unit="x host",
        median_a=ra.value, median_b=rb.value, ratio=change, ci=ci, n_a=ra.n, n_b=rb.n,
        direction=a.direction, significant=not ci.contains(1.0) and not math.isnan(change),
        beyond_tolerance=beyond(factor), floor=floor,
        beyond_floor=math.isnan(floor) or beyond(1.0 + floor),
        judgeable=ra.resolvable and rb.resolvable)


def _compare(samples_a: Sequence[Sample], samples_b: Sequence[Sample], tolerance: float, *,
             group_by: Sequence[str] | None, confidence: float, seed: int,
             include_evidence: bool, only: SampleFilter = SampleFilter()) -> _Comparison:
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    factor = 1.0 + tolerance
    samples_a = [s for s in samples_a if s.metric != TRIAL_FAILED and only.keeps(s)]
    samples_b = [s for s in samples_b if s.metric != TRIAL_FAILED and only.keeps(s)]
    if not include_evidence and only.metrics:  # metrics named by the user are judged
        samples_a = [s for s in samples_a if not s.is_evidence]
        samples_b = [s for s in samples_b if not s.is_evidence]
    elif not include_evidence:
        samples_a = [s for s in samples_a if not s.is_evidence and s.metric in MAIN_METRICS]
        samples_b = [s for s in samples_b if not s.is_evidence and s.metric in MAIN_METRICS]
    if group_by is None:
        group_by = condition_keys([*samples_a, *samples_b])
    groups_a = group_samples(samples_a, group_by)
    groups_b = group_samples(samples_b, group_by)
    floors_a, floors_b = _floors(samples_a, group_by, seed), _floors(samples_b, group_by, seed)
    layer_pos = list(group_by).index("layer") if "layer" in group_by else None
    changes: list[Change] = []
    metric_pos = list(group_by).index("metric") if "metric" in group_by else None
    cost_a, cost_b = _layer_costs(samples_a, group_by, seed), _layer_costs(samples_b, group_by, seed)
    for key in sorted(set(groups_a) & set(groups_b)):
        a, b = groups_a[key], groups_b[key]
        metric = key[metric_pos] if metric_pos is not None else a[0].metric
        if key in cost_a and key in cost_b:  # both runs paired: the layer's cost is compared
            changes.append(_cost_change(cost_a[key], cost_b[key], group_by, key, factor))
            continue
        values_a, values_b = [s.value for s in a], [s.value for s in b]
        ratio = ratio_of_medians(values_b, values_a, confidence=confidence, seed=seed)
        labels = {k: v for k, v in _group_labels(group_by, key).items() if k != "metric"}
        found: list[float] = []
        if layer_pos is not None:
            blank = (*key[:layer_pos], "", *key[layer_pos + 1:])
            found = [f.floor for f in (floors_a.get(blank), floors_b.get(blank))
                     if f is not None and not math.isnan(f.floor)]
        # the group's own spread too: a layer noisier than the baseline is judged by its noise
        own = resolution(values_a, values_b)
        found += [own] if not math.isnan(own) else []
        floor = max(found) if found else math.nan
        changes.append(Change(
            labels=labels, metric=metric, unit=a[0].unit,
            median_a=median(values_a), median_b=median(values_b),
            ratio=ratio.value, ci=ratio.ci, n_a=ratio.n_baseline, n_b=ratio.n,
            direction=better_direction(metric, a[0].unit),
            significant=ratio.significant, beyond_tolerance=ratio.beyond(factor),
            p_value=ratio.p_value, floor=floor,
            beyond_floor=math.isnan(floor) or ratio.beyond(1.0 + floor),
            judgeable=ratio.resolvable,
            collapse=_collapse(values_a, values_b, _zero_is_bad(a[0])),
        ))
    missing = [{**_group_labels(group_by, key), "metric": groups_a[key][0].metric}
               for key in sorted(set(groups_a) - set(groups_b))]
    return _Comparison(changes, missing)


def compare(run_a: RunLike, run_b: RunLike, tolerance: float = 0.05, *,
            group_by: Sequence[str] | None = None, confidence: float = 0.95,
            seed: int = DEFAULT_SEED, include_evidence: bool = False) -> list[Change]:
    """Changes from ``run_a`` (reference) to ``run_b`` for every group present in both.

    By default a group is every label except the replicate ones (repetition, trial, A/A
    group), so sweep axes are never pooled together; collector samples are left out unless
    ``include_evidence``. This judges numbers only: :func:`gate` also checks that the runs
    are whole (missing groups, failed trials, status, collapsed values).
    """
    return _compare(_samples(run_a), _samples(run_b), tolerance, group_by=group_by,
                    confidence=confidence, seed=seed, include_evidence=include_evidence).changes


def exit_code(changes: Iterable[Change]) -> int:
    """1 if any change is a regression, else 0 (the numbers only: ``vnetbench compare`` uses
    :attr:`Gate.exit_code`, which also fails on a broken run)."""
    return 1 if any(c.regression for c in changes) else 0


def summary_line(changes: Sequence[Change]) -> str:
    """How many groups were judged, and what came of them."""
    judged = [c for c in changes if c.judged]
    counts = {v: sum(1 for c in judged if c.verdict == v)
              for v in ("REGRESSION", "improved", "changed", "not resolved", "same")}
    text = (f"{len(judged)} of {len(changes)} groups judged: {counts['REGRESSION']} regression(s), "
            f"{counts['improved']} improved, {counts['changed']} changed, "
            f"{counts['not resolved']} not resolved (within noise), {counts['same']} same")
    unjudged = [c for c in changes if not c.judgeable and not c.collapsed]
    if unjudged:
        few = min(unjudged, key=lambda c: min(c.n_a, c.n_b))
        text += (f"; {len(unjudged)} not judged (too few repetitions, e.g. {few.n_a} vs "
                 f"{few.n_b}: no split of so few can be significant; repeat 4 or more)")
    collapsed = sum(1 for c in changes if c.collapsed)
    if collapsed:
        text += f"; {collapsed} collapsed (zero, nan or inf values)"
    return text


def format_changes(changes: Iterable[Change], only_called: bool = False) -> str:
    """A plain-text table of changes, collapsed groups and regressions first; ``only_called``
    keeps the called and the collapsed ones."""
    rows = sorted(changes, key=lambda c: (not c.collapsed, not c.regression, not c.called,
                                          c.metric))
    if only_called:
        rows = [c for c in rows if c.called or c.collapsed]
    return "\n".join(c.describe() for c in rows)


# ---- the gate: `vnetbench compare` -----------------------------------------------------------

GATE_KINDS: dict[str, str] = {
    "missing": "groups of A with no result in B",
    "failed": "failed trials (trial_failed samples) in A or B",
    "incomplete": "a run whose status is not complete (killed, cut short, failed at a stage)",
    "collapsed": "zero, nan or inf values where the other run had finite non-zero ones",
    "unjudged": "groups with too few repetitions to judge, or no group in both runs",
}
"""What fails the gate unless allowed, and what each kind means."""

_SHOWN = 3


@dataclass(frozen=True)
class GateProblem:
    """One reason the comparison cannot be trusted as it stands."""

    kind: str
    """One of ``GATE_KINDS``."""
    message: str
    """The full account (which run, how many, examples)."""
    short: str
    """A few words for the summary line ("28 failed trial(s) in B")."""


@dataclass(frozen=True)
class Gate:
    """The outcome of comparing two runs as a CI gate: changes, problems, pass or fail."""

    changes: list[Change]
    problems: list[GateProblem] = field(default_factory=list)
    allowed: frozenset[str] = frozenset()

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.regression]

    @property
    def failing(self) -> list[GateProblem]:
        """The problems that fail the gate (those not allowed)."""
        return [p for p in self.problems if p.kind not in self.allowed]

    @property
    def passed(self) -> bool:
        return not self.regressions and not self.failing

    @property
    def exit_code(self) -> int:
        """0 if the gate passed, 1 on a regression or a problem not allowed."""
        return 0 if self.passed else 1

    @property
    def baseline_moved(self) -> list[Change]:
        """The baselines' own (absolute) groups called changed: a layer judged as a ratio
        to ``host`` has ``host``'s own figures among the changes too (runs judged on absolute
        figures alone: ``host``'s)."""
        baselines = {c.labels["compared"].removeprefix("ratio to ") for c in self.changes
                     if c.labels.get("compared", "").startswith("ratio to ")} or {"host"}
        return [c for c in self.changes if c.called and "compared" not in c.labels
                and c.labels.get("layer") in baselines]

    def note_lines(self) -> list[str]:
        """What to keep in mind reading the verdicts (no effect on the gate): the native
        baseline itself moved between the runs, so the machine was not in the same state."""
        moved = self.baseline_moved
        if not moved:
            return []
        groups = [c for c in self.changes if "compared" not in c.labels
                  and c.labels.get("layer") == moved[0].labels["layer"]]
        widest = sorted(moved, key=lambda c: -abs(math.log(c.ratio)) if c.ratio > 0 else 0.0)
        def at(c: Change) -> str:
            where = ", ".join(f"{k}={c.labels[k]}" for k in ("nodes", "hosts") if k in c.labels)
            return f"{c.labels.get('workload', '?')} {c.metric}{f' ({where})' if where else ''}"

        shown = ", ".join(f"{at(c)} x{c.ratio:.2f}" for c in widest[:_SHOWN])
        return [f"note: the baseline {moved[0].labels['layer']} itself changed between the "
                f"runs in {len(moved)} of its {len(groups)} group(s) ({shown}): the runs saw "
                "the machine in different states, so a layer's change between them can be the "
                "machine's, not the code's (even its ratio to the baseline can move with the "
                "state by more than one run's noise floor); repeat A before trusting a called "
                "change"]

    def problem_lines(self) -> list[str]:
        """One line per problem: ``FAIL [kind] ...`` or ``allowed [kind] ...``."""
        return [f"{'allowed' if p.kind in self.allowed else 'FAIL'} [{p.kind}] {p.message}"
                for p in self.problems]

    def to_dict(self) -> dict[str, object]:
        """The gate as JSON-ready data: ``passed``, ``exit_code``, ``summary`` (the summary
        line), ``problems`` (kind, message, whether allowed) and every judged ``change``."""
        return {"passed": self.passed, "exit_code": self.exit_code,
                "summary": self.summary_line(),
                "regressions": len(self.regressions),
                "problems": [{"kind": p.kind, "message": p.message,
                              "allowed": p.kind in self.allowed} for p in self.problems],
                "notes": self.note_lines(),
                "changes": [c.to_dict() for c in self.changes]}

    def summary_line(self) -> str:
        """Always printed: how many groups were judged, and what failed the gate (or what
        was allowed through)."""
        text = f"gate {'passed' if self.passed else 'FAILED'}: {summary_line(self.changes)}"
        failing = [f"{len(self.regressions)} regression(s)"] if self.regressions else []
        failing += [f"{p.short} [--allow {p.kind}]" for p in self.failing]
        allowed = [p.short for p in self.problems if p.kind in self.allowed]
        if failing:
            text += "; failed by: " + ", ".join(failing)
        if allowed:
            text += "; allowed: " + ", ".join(allowed)
        return text


def _where(labels: dict[str, str]) -> str:
    metric = labels.get("metric", "")
    rest = " ".join(f"{k}={v}" for k, v in labels.items() if k != "metric")
    return f"{metric} [{rest}]"


def _examples(items: Sequence[str], most: int = _SHOWN) -> str:
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")


def _trials(samples: Sequence[Sample]) -> set[str]:
    return {s.labels.get("trial", "") for s in samples}


def _explained_by(failure: Sample, group: dict[str, str]) -> bool:
    """Whether a failed trial accounts for a missing group: its conditions are the group's."""
    conditions = {k: v for k, v in failure.labels.items()
                  if k not in REPLICATE_LABELS and k != "stage"}
    return all(group.get(k) == v for k, v in conditions.items())


def _name(letter: str, run: RunData | None) -> str:
    return f"{letter} ({run.path})" if run is not None else letter


def _failure_problem(letter: str, samples: Sequence[Sample], run: RunData | None,
                     accounted: int) -> GateProblem | None:
    """Kind "failed": the run's failed trials, and how many groups of A they account for."""
    failures = [s for s in samples if s.metric == TRIAL_FAILED]
    if not failures:
        return None
    failed, total = _trials(failures), _trials(samples)
    n_failed = len(failed) if "" not in failed else len(failures)
    n_total = f" of {len(total)}" if "" not in total else ""
    stages = Counter(s.labels.get("stage", "?") for s in failures)
    layers = sorted({s.labels["layer"] for s in failures if "layer" in s.labels})
    text = (f"{_name(letter, run)}: {n_failed}{n_total} trial(s) failed ("
            + ", ".join(f"at {stage}: {n}" for stage, n in stages.most_common())
            + (f"; layers {', '.join(layers)}" if layers else "") + ")")
    if accounted:
        text += f", so {accounted} group(s) of A have no result in B"
    if run is not None and run.meta.status is RunStatus.FAILED:
        text += "; status failed"
    return GateProblem("failed", text, f"{n_failed} failed trial(s) in {letter}")


def _status_problem(letter: str, samples: Sequence[Sample], run: RunData | None
                    ) -> GateProblem | None:
    if run is None or run.status is RunStatus.COMPLETE:
        return None
    has_failures = any(s.metric == TRIAL_FAILED for s in samples)
    if (run.status is RunStatus.FAILED and has_failures
            and run.meta.failing_stage in (None, "trials")):
        return None  # the failed trials say it (kind "failed")
    if run.truncated:
        why = "its last sample line was cut: the run was killed while writing"
    elif run.meta.status is RunStatus.RUNNING:
        why = "run.json still says running: the run was killed or is still going"
    elif run.status is RunStatus.FAILED:
        why = f"it failed at stage {run.meta.failing_stage or '?'}"
    else:
        why = "it was interrupted before all trials ran"
    return GateProblem("incomplete", f"{_name(letter, run)}: status {run.status.value} ({why})",
                       f"{letter} {run.status.value}")


def gate(run_a: RunLike, run_b: RunLike, tolerance: float = 0.05, *,
         allow: Iterable[str] = (), include_evidence: bool = False,
         confidence: float = 0.95, seed: int = DEFAULT_SEED,
         only: SampleFilter = SampleFilter()) -> Gate:
    """Compare ``run_b`` against the reference ``run_a`` as a gate that cannot pass a broken
    run: the changes, plus a :class:`GateProblem` for each of ``GATE_KINDS`` that applies;
    those whose kind is in ``allow`` are reported but do not fail it. ``only`` narrows what
    is judged (a filter matching nothing: VnetbenchError)."""
    allowed = frozenset(allow)
    unknown = allowed - set(GATE_KINDS)
    if unknown:
        raise ValueError(f"unknown gate kind(s) {sorted(unknown)}; known: {list(GATE_KINDS)}")
    samples_a, data_a = _load(run_a)
    samples_b, data_b = _load(run_b)
    only.check([*samples_a, *samples_b])
    result = _compare(samples_a, samples_b, tolerance, group_by=None, confidence=confidence,
                      seed=seed, include_evidence=include_evidence, only=only)
    problems: list[GateProblem] = []

    failures_b = [s for s in samples_b if s.metric == TRIAL_FAILED]
    missing = [g for g in result.missing if not any(_explained_by(f, g) for f in failures_b)]
    explained = len(result.missing) - len(missing)
    if missing:
        problems.append(GateProblem(
            "missing", f"{_name('B', data_b)} has no result for {len(missing)} group(s) of A: "
            + _examples([_where(g) for g in missing]), f"{len(missing)} group(s) missing from B"))
    for letter, samples, data, accounted in (("A", samples_a, data_a, 0),
                                             ("B", samples_b, data_b, explained)):
        for problem in (_failure_problem(letter, samples, data, accounted),
                        _status_problem(letter, samples, data)):
            if problem is not None:
                problems.append(problem)

    collapsed = [c for c in result.changes if c.collapsed]
    if collapsed:
        problems.append(GateProblem(
            "collapsed", f"{len(collapsed)} group(s) collapsed (zero, nan or inf values where "
            "the other run had finite non-zero ones): "
            + _examples([f"{_where({**c.labels, 'metric': c.metric})} {c.collapse}"
                         for c in collapsed]), f"{len(collapsed)} collapsed group(s)"))
    unjudged = [c for c in result.changes if not c.judgeable and not c.collapsed]
    if unjudged:
        few = min(unjudged, key=lambda c: min(c.n_a, c.n_b))
        problems.append(GateProblem(
            "unjudged", f"{len(unjudged)} of {len(result.changes)} group(s) not judged: too few "
            f"repetitions (e.g. {few.n_a} vs {few.n_b}) for any difference to be significant; "
            "repeat 4 or more: " + _examples([_where({**c.labels, 'metric': c.metric})
                                              for c in unjudged]),
            f"{len(unjudged)} group(s) not judged"))
    if not result.changes:
        problems.append(GateProblem(
            "unjudged", "no group has results in both runs: nothing was compared",
            "nothing compared"))
    return Gate(result.changes, problems, allowed)
