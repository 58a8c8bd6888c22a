"""Statistics for evidence: medians, bootstrap intervals, noise, outliers and ratios to a baseline.

Everything here is pure numpy and deterministic (bootstraps are seeded). Conventions:

* the *centre* of a group of repetitions is its median (robust against a stray slow trial);
* intervals are 95% percentile-bootstrap intervals unless asked otherwise;
* a difference between two layers (or two runs) is *called* only when it is both larger than a
  factor (and than the run's noise floor, when it has one) and significant by an exact
  permutation test (``significance``), which keeps its 5% promise at every repetition count;
  the bootstrap interval is shown beside the ratio, it does not decide.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from vnetbench.results.contention import SliceKey, contended, tail_contention
from vnetbench.results.metrics import PERCENTILE_METRIC as PERCENTILE_METRIC
from vnetbench.results.metrics import percentile_of as percentile_of
from vnetbench.results.model import AA_LABEL as AA_LABEL
from vnetbench.results.model import DESIGN_LABEL, PAIR_LABEL, Sample
from vnetbench.results.pairing import PairedResult, ScalarPairs, floor_of
from vnetbench.results.significance import ALPHA, can_be_significant, permutation_p_value

FloatArray = npt.NDArray[np.float64]
Direction = Literal["lower", "higher"]
Design = Literal["unpaired", "interleaved", "rounds", "blocks"]

DEFAULT_GROUP_BY: tuple[str, ...] = ("layer", "nodes", "hosts", "workload", "metric")
DEFAULT_SEED = 20240601
DEFAULT_RESAMPLES = 2000
OUTLIER_THRESHOLD = 3.5
MIN_OUTLIER_VALUES = 5


def _array(values: Iterable[float]) -> FloatArray:
    arr = np.asarray(list(values), dtype=np.float64)
    return arr[np.isfinite(arr)]


def median(values: Iterable[float]) -> float:
    """Median of the finite values (nan when there are none)."""
    arr = _array(values)
    return float(np.median(arr)) if arr.size else math.nan


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean of the finite values (nan when there are none)."""
    arr = _array(values)
    return float(np.mean(arr)) if arr.size else math.nan


def coefficient_of_variation(values: Iterable[float]) -> float:
    """Sample standard deviation / |mean|; nan for fewer than two values or a zero mean."""
    arr = _array(values)
    if arr.size < 2:
        return math.nan
    centre = float(np.mean(arr))
    if centre == 0.0:
        return math.nan
    return float(np.std(arr, ddof=1) / abs(centre))


@dataclass(frozen=True)
class Interval:
    """A confidence interval [low, high] at a given confidence level."""

    low: float
    high: float
    confidence: float = 0.95

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    @property
    def width(self) -> float:
        return self.high - self.low

    def __str__(self) -> str:
        return f"[{self.low:.4g}, {self.high:.4g}]"




def _stat_func(stat: Literal["median", "mean"]) -> Callable[..., FloatArray]:
    return np.median if stat == "median" else np.mean


def _resampled(arr: FloatArray, stat: Literal["median", "mean"], n_resamples: int,
               rng: np.random.Generator) -> FloatArray:
    func = _stat_func(stat)
    rows = max(1, min(n_resamples, 4_000_000 // max(arr.size, 1)))  # bound the memory used
    parts = []
    for start in range(0, n_resamples, rows):
        idx = rng.integers(0, arr.size, size=(min(rows, n_resamples - start), arr.size))
        parts.append(np.asarray(func(arr[idx], axis=1), dtype=np.float64))
    return np.concatenate(parts)


def bootstrap_ci(values: Iterable[float], *, stat: Literal["median", "mean"] = "median",
                 confidence: float = 0.95, n_resamples: int = DEFAULT_RESAMPLES,
                 seed: int = DEFAULT_SEED) -> Interval:
    """Percentile-bootstrap interval of the median (or mean) of ``values``.

    One value gives a degenerate interval [v, v]; none gives [nan, nan].
    """
    arr = _array(values)
    if arr.size == 0:
        return Interval(math.nan, math.nan, confidence)
    if arr.size == 1:
        return Interval(float(arr[0]), float(arr[0]), confidence)
    rng = np.random.default_rng(seed)
    boot = _resampled(arr, stat, n_resamples, rng)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [alpha, 1.0 - alpha])
    return Interval(float(low), float(high), confidence)


def modified_z_scores(values: Sequence[float]) -> FloatArray:
    """Iglewicz-Hoaglin modified z-scores: 0.6745 (x - median) / MAD.

    When the MAD is zero (more than half the values equal) the mean absolute deviation
    scaled by 1.253314 is used instead; if that is zero too every score is 0.
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return arr
    centre = float(np.median(arr))
    dev = np.abs(arr - centre)
    mad = float(np.median(dev))
    if mad > 0.0:
        return np.asarray(0.6745 * (arr - centre) / mad, dtype=np.float64)
    meanad = float(np.mean(dev))
    if meanad > 0.0:
        return np.asarray((arr - centre) / (1.253314 * meanad), dtype=np.float64)
    return np.zeros_like(arr)


def outlier_indices(values: Sequence[float], threshold: float = OUTLIER_THRESHOLD) -> list[int]:
    """Indices of values whose |modified z-score| exceeds ``threshold`` (3.5 by default).

    Fewer than ``MIN_OUTLIER_VALUES`` values have none: with three, the MAD is the distance
    of the closest pair and the third value is flagged by chance (29% of three normal
    draws, simulated), which says nothing about a disturbed trial.
    """
    if len(values) < MIN_OUTLIER_VALUES:
        return []
    scores = modified_z_scores(values)
    return [int(i) for i in np.flatnonzero(np.abs(scores) > threshold)]


@dataclass(frozen=True)
class Ratio:
    """median(values) / median(baseline), a bootstrap interval of that ratio for display, and
    the permutation test's p-value that decides significance."""

    value: float
    ci: Interval
    n: int
    n_baseline: int
    p_value: float = math.nan
    design: Design = "unpaired"
    """How the layer and its baseline were measured: ``unpaired`` (repetitions compared as
    two groups), ``interleaved`` (paths alternated in slices within rounds), ``rounds`` (each
    path's run whole, every path once a round, labs alive throughout) or ``blocks`` (a layer's
    trial next to a baseline trial); paired designs are judged pair by pair (``pairing``)."""
    min_p: float = math.nan
    """The smallest p-value a paired design could give (nan: unpaired, see ``resolvable``)."""

    @property
    def resolvable(self) -> bool:
        """Enough repetitions (or pairs) that the test could ever be significant."""
        if not math.isnan(self.min_p):
            return self.min_p < ALPHA
        return can_be_significant(self.n, self.n_baseline)

    @property
    def significant(self) -> bool:
        """The permutation test rejects "one population" at the 5% level."""
        return (not math.isnan(self.p_value)) and self.p_value < ALPHA

    def beyond(self, factor: float) -> bool:
        """The ratio is further from 1 than ``factor`` (either way, symmetric in log)."""
        if math.isnan(self.value) or self.value <= 0.0:
            return False
        return self.value > factor or self.value < 1.0 / factor

    def called(self, factor: float = 1.05, floor: float = 0.0) -> bool:
        """A difference is called only when it is larger than ``factor`` and than the noise
        floor (``1 + floor``), and significant."""
        return self.significant and self.beyond(max(factor, 1.0 + floor))


def ratio_of_medians(values: Iterable[float], baseline: Iterable[float], *,
                     confidence: float = 0.95, n_resamples: int = DEFAULT_RESAMPLES,
                     seed: int = DEFAULT_SEED) -> Ratio:
    """Ratio of medians, its independent-resampling percentile-bootstrap interval (shown, not
    deciding) and the permutation test's p-value (deciding).

    With a single value on either side there is no interval (the p-value is still exact, and
    can never be below 2 / (n + 1)).
    """
    a = _array(values)
    b = _array(baseline)
    if a.size == 0 or b.size == 0:
        return Ratio(math.nan, Interval(math.nan, math.nan, confidence), int(a.size), int(b.size))
    mb = float(np.median(b))
    point = float(np.median(a)) / mb if mb != 0.0 else math.nan
    p_value = permutation_p_value(a, b, seed=seed)
    if a.size < 2 or b.size < 2 or math.isnan(point):
        # a one-sided bootstrap would understate the uncertainty: no interval at all
        return Ratio(point, Interval(math.nan, math.nan, confidence), int(a.size), int(b.size),
                     p_value)
    rng = np.random.default_rng(seed)
    boot_a = _resampled(a, "median", n_resamples, rng)
    boot_b = _resampled(b, "median", n_resamples, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boot_a / boot_b
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return Ratio(point, Interval(math.nan, math.nan, confidence), int(a.size), int(b.size),
                     p_value)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(ratios, [alpha, 1.0 - alpha])
    return Ratio(point, Interval(float(low), float(high), confidence), int(a.size), int(b.size),
                 p_value)


def min_repetitions(confidence: float = 0.95) -> int:
    """Smallest n for which a distribution-free interval of the median exists at ``confidence``.

    The widest order-statistic interval [min, max] covers the median with probability
    1 - 2 * 0.5**n, so n must satisfy 2 * 0.5**n <= 1 - confidence (6 for 95%, 8 for 99%).
    """
    alpha = 1.0 - confidence
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return math.ceil(math.log2(2.0 / alpha) - 1e-12)


_LOWER_HINTS = ("rtt", "latency", "lat_", "cpu", "drop", "retrans", "err", "loss", "overflow",
                "timeout", "jitter", "duration", "wait", "cost")
_HIGHER_HINTS = ("tps", "goodput", "throughput", "bps", "pps", "ops", "qps", "rps", "rate",
                 "bandwidth", "requests", "transactions", "_per_s")
_TIME_SUFFIXES = ("_ns", "_us", "_ms", "_s", "_sec", "_seconds")


def better_direction(metric: str, unit: str = "") -> Direction | None:
    """Which way is better for a metric: ``"lower"`` for times and costs, ``"higher"`` for rates.

    Inferred from the metric name (``rtt_p99_us`` -> lower, ``goodput_bps`` -> higher) and,
    failing that, from the unit; ``None`` when it cannot be told.
    """
    name = metric.lower()
    if any(hint in name for hint in _HIGHER_HINTS) and not any(
            hint in name for hint in ("cpu", "drop", "retrans", "err")):
        return "higher"
    if any(hint in name for hint in _LOWER_HINTS) or name.endswith(_TIME_SUFFIXES):
        return "lower"
    u = unit.lower()
    if u in {"s", "ms", "us", "ns", "seconds", "µs"}:
        return "lower"
    if u.endswith(("/s", "ps")) or u in {"bps", "tps", "bit/s"}:
        return "higher"
    return None


@dataclass(frozen=True)
class GroupSummary:
    """Summary of the values of one group of samples (e.g. one layer's rtt_p99_us at 8 nodes)."""

    key: tuple[str, ...]
    labels: dict[str, str]
    unit: str
    values: tuple[float, ...]
    median: float
    mean: float
    ci: Interval
    cv: float
    outliers: tuple[int, ...] = field(default=())

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def metric(self) -> str:
        return self.labels.get("metric", "")


REPLICATE_LABELS: tuple[str, ...] = ("repetition", "trial", "aa", PAIR_LABEL, DESIGN_LABEL)
"""Labels that tell replicates apart (and how they were paired): never part of a group's
identity."""


def condition_keys(samples: Iterable[Sample],
                   exclude: Sequence[str] = REPLICATE_LABELS) -> tuple[str, ...]:
    """Every label naming a measuring condition, then ``"metric"``: a full ``group_by``.

    Order: layer, nodes, hosts, workload, then the other labels (sweep axes such as
    ``delay``, places such as ``netns``) alphabetically. Replicate labels are left out.
    """
    names: set[str] = set()
    for sample in samples:
        names.update(sample.labels)
    names -= set(exclude)
    names.discard("metric")
    head = [n for n in ("layer", "nodes", "hosts", "workload") if n in names]
    return (*head, *sorted(names - set(head)), "metric")


def _label(sample: Sample, name: str) -> str:
    return sample.metric if name == "metric" else sample.labels.get(name, "")


def group_samples(samples: Iterable[Sample], group_by: Sequence[str] = DEFAULT_GROUP_BY,
                  ) -> dict[tuple[str, ...], list[Sample]]:
    """Samples grouped by the values of ``group_by`` (``"metric"`` means the metric name)."""
    groups: dict[tuple[str, ...], list[Sample]] = {}
    for sample in samples:
        key = tuple(_label(sample, name) for name in group_by)
        groups.setdefault(key, []).append(sample)
    return groups


def _natural(key: tuple[str, ...]) -> tuple[tuple[int, float, str], ...]:
    out: list[tuple[int, float, str]] = []
    for part in key:
        try:
            out.append((0, float(part), ""))
        except ValueError:
            out.append((1, 0.0, part))
    return tuple(out)


def summarize(samples: Iterable[Sample], group_by: Sequence[str] = DEFAULT_GROUP_BY, *,
              confidence: float = 0.95, seed: int = DEFAULT_SEED,
              n_resamples: int = DEFAULT_RESAMPLES) -> list[GroupSummary]:
    """One :class:`GroupSummary` per group, sorted naturally (2 < 10) by the group key."""
    table: list[GroupSummary] = []
    for key, members in sorted(group_samples(samples, group_by).items(),
                               key=lambda kv: _natural(kv[0])):
        values = [s.value for s in members]
        table.append(GroupSummary(
            key=key,
            labels=dict(zip(group_by, key, strict=True)),
            unit=members[0].unit,
            values=tuple(values),
            median=median(values),
            mean=mean(values),
            ci=bootstrap_ci(values, confidence=confidence, seed=seed, n_resamples=n_resamples),
            cv=coefficient_of_variation(values),
            outliers=tuple(outlier_indices(values)),
        ))
    return table


FLOOR_Z = 2.5
"""Half-width, in robust standard deviations of a difference of medians, of the noise floor:
2 (about 95%) times 1.25 (a median's standard error over a mean's, for normal data)."""


def robust_spread(a: Iterable[float], b: Iterable[float]) -> float:
    """Robust relative standard deviation of one trial, from two groups of the same thing:
    MAD about each group's own median (on log values when all are positive, else relative to
    the pooled median). nan without two finite values a side."""
    xa, xb = _array(a), _array(b)
    if xa.size < 2 or xb.size < 2:
        return math.nan
    if min(float(xa.min()), float(xb.min())) > 0.0:
        xa, xb = np.log(xa), np.log(xb)
        scale = 1.0
    else:
        scale = abs(float(np.median(np.concatenate([xa, xb]))))
        if scale == 0.0:
            return math.nan
    devs = np.concatenate([xa - np.median(xa), xb - np.median(xb)])
    return 1.4826 * float(np.median(np.abs(devs))) / scale


def resolution(a: Iterable[float], b: Iterable[float]) -> float:
    """The smallest relative change between the medians of ``a`` and ``b`` their spread
    resolves: ``FLOOR_Z`` robust standard deviations of a difference of medians, as a
    factor minus 1 (0.04: 4%); nan when the spread is unknown."""
    xa, xb = _array(a), _array(b)
    spread = robust_spread(xa, xb)
    if math.isnan(spread):
        return math.nan
    return math.exp(FLOOR_Z * spread * math.sqrt(1.0 / xa.size + 1.0 / xb.size)) - 1.0


@dataclass(frozen=True)
class NoiseFloor:
    """What the A/A control says about one metric: group b / group a, and the smallest
    relative change the run can resolve (``floor``: 0.04 means changes within 4% are noise).

    The floor is the larger of the difference the two groups of the same layer showed, and
    the resolution their spread allows (``resolution``). Robust, so one disturbed trial does
    not make every layer unresolved.
    """

    ratio: Ratio
    a: tuple[float, ...] = ()
    b: tuple[float, ...] = ()
    paired_floor: float | None = None
    """The floor of a paired design (``pairing.floor_of``), which replaces the one computed
    from the two groups' spread."""

    @property
    def spread(self) -> float:
        """Robust relative standard deviation of one trial (nan without two values a side)."""
        return robust_spread(self.a, self.b)

    @property
    def floor(self) -> float:
        if self.paired_floor is not None:
            return self.paired_floor
        value = self.ratio.value
        resolved = resolution(self.a, self.b)
        if math.isnan(resolved) or math.isnan(value) or value <= 0.0:
            return math.nan
        return max(math.exp(abs(math.log(value))) - 1.0, resolved)

    @property
    def failed(self) -> bool:
        """The baseline differs significantly from itself: the machine drifted."""
        return self.ratio.significant


def noise_floor(samples: Iterable[Sample], seed: int = DEFAULT_SEED) -> NoiseFloor | None:
    """The A/A result of one group of baseline samples (None without both groups)."""
    members = list(samples)
    a = tuple(s.value for s in members if s.labels.get(AA_LABEL) == "a")
    b = tuple(s.value for s in members if s.labels.get(AA_LABEL) == "b")
    if not a or not b:
        return None
    return NoiseFloor(ratio_of_medians(b, a, seed=seed), a, b)


Verdict = Literal["better", "worse", "same", "not resolved", "emulated", "unknown"]


@dataclass(frozen=True)
class LayerRatio:
    """One layer's metric relative to the baseline layer under the same conditions."""

    layer: str
    baseline: str
    labels: dict[str, str]
    metric: str
    unit: str
    median: float
    baseline_median: float
    ratio: Ratio
    direction: Direction | None
    noise: NoiseFloor | None = None
    emulated: bool = False
    """The layer ran on an emulated CPU (a TCG guest): never called better or worse."""
    contention: float = math.nan
    """For a tail percentile: the share of the machine's CPU other work used while the
    baseline was measured (``contention``); above ``CONTENDED_SHARE`` the tail is not judged."""

    @property
    def contended(self) -> bool:
        return contended(self.contention)

    @property
    def floor(self) -> float:
        """The run's noise floor for this metric (nan without an A/A control)."""
        return self.noise.floor if self.noise is not None else math.nan

    @property
    def added(self) -> float:
        """What the layer adds to the baseline (added µs for a latency): its median minus the
        baseline's, or in a paired design the baseline's median times the ratio's excess (the
        typical round's difference, consistent with the ratio shown)."""
        if self.ratio.design != "unpaired" and not math.isnan(self.ratio.value):
            return self.baseline_median * (self.ratio.value - 1.0)
        return self.median - self.baseline_median

    def verdict(self, factor: float = 1.05) -> Verdict:
        """Direction-aware verdict. ``better``/``worse``: larger than ``factor`` and than the
        noise floor, and significant. ``not resolved``: larger than ``factor`` but within the
        floor, or not significant (too few repetitions, too much noise), or a tail measured
        while other work kept the machine's CPU busy (``contended``). ``emulated``: the
        layer ran on an emulated CPU, not comparable with native. Else ``same``."""
        if math.isnan(self.ratio.value):
            return "unknown"
        if self.emulated:
            return "emulated"
        floor = 0.0 if math.isnan(self.floor) else self.floor
        if self.ratio.called(factor, floor) and not self.contended:
            if self.direction is None:
                return "not resolved"
            lower = self.ratio.value < 1.0
            return "better" if lower == (self.direction == "lower") else "worse"
        return "not resolved" if self.ratio.beyond(factor) else "same"


def ratios_to_baseline(samples: Iterable[Sample], *, baseline: str = "host",
                       group_by: Sequence[str] = ("nodes", "hosts", "workload", "metric"),
                       confidence: float = 0.95, seed: int = DEFAULT_SEED,
                       n_resamples: int = DEFAULT_RESAMPLES,
                       emulated: Collection[str] = (),
                       shares: Mapping[SliceKey, float] | None = None) -> list[LayerRatio]:
    """Each non-baseline layer's median over the baseline layer's median, per group, with
    the group's A/A noise floor when the baseline was measured as two groups. Layers in
    ``emulated`` ran on an emulated CPU: their verdict is ``emulated``. ``shares``: each
    slice's CPU share used outside the lab (``contention.outside_shares`` of the run's
    samples), which decides whether a tail percentile is judged.

    Groups measured in a paired design (every sample labelled ``pair``) are judged pair by
    pair (``pairing``): the ratio is the median of the pairs' ratios (for a latency
    percentile: of each round's own percentile), the noise floor from the A/A pairs.

    Groups without baseline samples are skipped (nothing to compare against).
    """
    keys = ("layer", *group_by)
    groups = group_samples(samples, keys)
    floors: dict[tuple[str, ...], NoiseFloor | None] = {}
    out: list[LayerRatio] = []
    for key in sorted(groups, key=_natural):
        layer, rest = key[0], key[1:]
        if layer == baseline:
            continue
        base = groups.get((baseline, *rest))
        if not base:
            continue
        members = groups[key]
        labels = dict(zip(group_by, rest, strict=True))
        paired = paired_design(members, base)
        if rest not in floors:
            floors[rest] = (paired_noise_floor(base, confidence, seed)
                            if paired is not None else noise_floor(base, seed=seed))
        values = [s.value for s in members]
        base_values = [s.value for s in base]
        if paired is not None:
            pairs = ScalarPairs.make(by_pair(members), baseline_by_pair(base))
            ratio = pairs_ratio(pairs, paired, confidence, seed)
        else:
            ratio = ratio_of_medians(values, base_values, confidence=confidence, seed=seed,
                                     n_resamples=n_resamples)
        out.append(LayerRatio(
            layer=layer, baseline=baseline, labels=labels,
            metric=members[0].metric, unit=members[0].unit,
            median=median(values), baseline_median=median(base_values),
            ratio=ratio,
            direction=better_direction(members[0].metric, members[0].unit),
            noise=floors[rest], emulated=layer in emulated or baseline in emulated,
            contention=tail_contention(members[0].metric, base, shares),
        ))
    return out


def paired_ratio(members: Sequence[Sample], base: Sequence[Sample], confidence: float = 0.95,
                 seed: int = DEFAULT_SEED) -> Ratio | None:
    """A layer's samples over its baseline's judged pair by pair (``pairing``): the median of
    the pairs' log ratios, its block-bootstrap interval and the randomisation test within
    pairs. None when the samples are not all of a paired design or share no pair."""
    design = paired_design(members, base)
    if design is None:
        return None
    pairs = ScalarPairs.make(by_pair(members), baseline_by_pair(base))
    if pairs.n == 0:
        return None
    return pairs_ratio(pairs, design, confidence, seed)


def pairs_ratio(pairs: ScalarPairs, design: Design, confidence: float = 0.95,
                seed: int = DEFAULT_SEED) -> Ratio:
    """``pairs`` judged as a paired ratio of ``design``."""
    return _as_ratio(pairs.ratio(confidence, seed), design, confidence)


def paired_design(members: Sequence[Sample], base: Sequence[Sample]) -> Design | None:
    """The paired design of a layer's group and its baseline's, if every sample has a pair."""
    if not all(PAIR_LABEL in s.labels for s in (*members, *base)):
        return None
    design = members[0].labels.get(DESIGN_LABEL, "interleaved")
    if design == "rounds":
        return "rounds"
    return "blocks" if design == "blocks" else "interleaved"


def by_pair(members: Iterable[Sample]) -> dict[str, float]:
    """Per pair, the median of ``members``' values."""
    values: dict[str, list[float]] = {}
    for s in members:
        values.setdefault(s.labels[PAIR_LABEL], []).append(s.value)
    return {k: median(v) for k, v in values.items()}


def baseline_by_pair(base: Iterable[Sample]) -> dict[str, list[float]]:
    """Per pair, the baseline's values: group ``a`` first, then ``b``."""
    groups: dict[str, dict[str, list[float]]] = {}
    for s in base:
        groups.setdefault(s.labels[PAIR_LABEL], {}).setdefault(
            s.labels.get(AA_LABEL, "a"), []).append(s.value)
    return {k: [median(g[aa]) for aa in sorted(g)] for k, g in groups.items()}


def _as_ratio(result: PairedResult, design: Design, confidence: float) -> Ratio:
    return Ratio(result.value, Interval(result.low, result.high, confidence), result.n,
                 result.n, result.p_value, design, result.min_p)


def paired_noise_floor(base: Sequence[Sample], confidence: float = 0.95,
                       seed: int = DEFAULT_SEED) -> NoiseFloor | None:
    """The A/A result of one group of paired baseline samples: group b against group a
    pair by pair (None without pairs holding both A/A groups)."""
    design = paired_design(base, base) or "interleaved"
    members = baseline_by_pair(base)
    pairs = ScalarPairs.make({k: v[1] for k, v in members.items() if len(v) == 2},
                             {k: v[:1] for k, v in members.items() if len(v) == 2})
    result = pairs.ratio(confidence, seed)
    if result.n == 0:
        return None
    a = tuple(s.value for s in base if s.labels.get(AA_LABEL) == "a")
    b = tuple(s.value for s in base if s.labels.get(AA_LABEL) == "b")
    return NoiseFloor(_as_ratio(result, design, confidence), a, b, paired_floor=floor_of(result))


def index_by(items: Iterable[LayerRatio], *names: str) -> Mapping[tuple[str, ...], LayerRatio]:
    """Look-up of layer ratios by (layer, then the given label names)."""
    return {(r.layer, *(r.metric if n == "metric" else r.labels.get(n, "") for n in names)): r
            for r in items}
