"""Find the knee of a scaling curve (a metric against the number of nodes).

Method: a two-segment piecewise-linear fit. Every interior point is tried as the joint of
two least-squares lines (the joint belongs to both segments); the knee is the joint with the
smallest total squared error. A knee is only reported when the two segments explain the
curve much better than one straight line *and* the slope changes by a visible amount
relative to the curve's range; flat or straight curves have no knee (``None``).

A knee is also told in nodes per core (``node_cores``: the CPUs the nodes could run on), so
a curve from a 4-core testbed and one from a 2-core host compare.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vnetbench.results.recorded import RecordedScenario


@dataclass(frozen=True)
class Knee:
    """Where the curve bends: at ``x`` (index ``index`` of the sorted points)."""

    x: float
    y: float
    index: int
    slope_before: float
    slope_after: float
    improvement: float
    """1 - SSE(two segments) / SSE(one line): how much better the bent model fits."""


def _sse(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> tuple[float, float]:
    """Sum of squared residuals of a least-squares line, and its slope."""
    if x.size < 2 or float(np.ptp(x)) == 0.0:
        return 0.0, 0.0
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    return float(np.sum(resid * resid)), float(slope)


def find_knee(xs: Sequence[float], ys: Sequence[float], *, min_improvement: float = 0.8,
              min_slope_change: float = 0.25, min_relative_range: float = 0.05) -> Knee | None:
    """The knee of y(x), or None when the curve is flat, straight or too short (< 4 points).

    ``min_slope_change``: |slope_after - slope_before| * (x range) must be at least this
    fraction of the y range. ``min_relative_range``: a curve whose y range is below this
    fraction of its mean |y| is flat. Repeated x values are averaged by their median first.
    """
    if len(xs) != len(ys):
        raise ValueError("xs and ys must have the same length")
    pairs: dict[float, list[float]] = {}
    for x, y in zip(xs, ys, strict=True):
        if math.isfinite(x) and math.isfinite(y):
            pairs.setdefault(float(x), []).append(float(y))
    if len(pairs) < 4:
        return None
    x_arr = np.array(sorted(pairs), dtype=np.float64)
    y_arr = np.array([float(np.median(pairs[x])) for x in x_arr], dtype=np.float64)
    y_range = float(np.ptp(y_arr))
    scale = float(np.mean(np.abs(y_arr)))
    if y_range == 0.0 or (scale > 0.0 and y_range / scale < min_relative_range):
        return None
    sse_line, _ = _sse(x_arr, y_arr)
    if sse_line <= 1e-12 * (y_range**2) * x_arr.size:
        return None  # a straight line: no knee
    best: tuple[float, int, float, float] | None = None
    for i in range(1, x_arr.size - 1):
        left, s1 = _sse(x_arr[: i + 1], y_arr[: i + 1])
        right, s2 = _sse(x_arr[i:], y_arr[i:])
        total = left + right
        if best is None or total < best[0]:
            best = (total, i, s1, s2)
    assert best is not None
    total, index, s1, s2 = best
    improvement = 1.0 - total / sse_line
    x_range = float(np.ptp(x_arr))
    if improvement < min_improvement or abs(s2 - s1) * x_range < min_slope_change * y_range:
        return None
    return Knee(x=float(x_arr[index]), y=float(y_arr[index]), index=index, slope_before=s1,
                slope_after=s2, improvement=improvement)


def cpus_in(cpuset: str) -> int:
    """How many CPUs a cpuset such as ``0-1,3`` names (0 when it cannot be read)."""
    count = 0
    for part in cpuset.split(","):
        lo, _, hi = part.strip().partition("-")
        try:
            count += int(hi or lo) - int(lo) + 1
        except ValueError:
            return 0
    return count


CPUSET_LABEL = "resources.cpuset"
"""The label a swept ``resources: {cpuset: [...]}`` gives each sample."""


def node_cores(labels: Mapping[str, str], scenario: RecordedScenario,
               environment: Mapping[str, object]) -> int:
    """CPUs a trial's nodes could run on, to count a knee in nodes per core: the sample's
    swept cpuset, else the scenario's fixed one, else the machine's cores (0: unknown)."""
    swept = labels.get(CPUSET_LABEL)
    for cpuset in (swept, scenario.cpuset):
        if isinstance(cpuset, (str, int)) and cpus_in(str(cpuset)) > 0:
            return cpus_in(str(cpuset))
    cores = environment.get("cores")
    return int(cores) if isinstance(cores, (int, float)) and cores > 0 else 0


MIN_STEPS_AFTER = 2
"""A degrading knee needs this many node counts after it (one high point is not a trend)."""
MIN_RISE = 0.10
"""...and the curve must end at least this far (relative) worse than at the knee."""


def degrading_knee(xs: Sequence[float], ys: Sequence[float], *,
                   lower_is_better: bool) -> Knee | None:
    """A knee after which the curve gets worse and keeps getting worse: the knee of
    ``find_knee`` when the slope after it is worse than before, every step after it is
    worse than the one before, at least ``MIN_STEPS_AFTER`` steps follow it and the curve
    ends ``MIN_RISE`` worse than at the knee. A single slow trial makes a bend but not this;
    a curve that flattens (a throughput saturating) bends the other way."""
    knee = find_knee(xs, ys)
    if knee is None:
        return None
    pairs: dict[float, list[float]] = {}
    for x, y in zip(xs, ys, strict=True):
        if math.isfinite(x) and math.isfinite(y):
            pairs.setdefault(float(x), []).append(float(y))
    curve = [float(np.median(pairs[x])) for x in sorted(pairs)]
    sign = 1.0 if lower_is_better else -1.0
    after = curve[knee.index:]
    steps = [sign * (b - a) for a, b in itertools.pairwise(after)]
    worse_slope = sign * (knee.slope_after - knee.slope_before) > 0
    rise = sign * (after[-1] - after[0]) / abs(after[0]) if after[0] else 0.0
    if (not worse_slope or len(steps) < MIN_STEPS_AFTER or any(s <= 0 for s in steps)
            or rise < MIN_RISE):
        return None
    return knee
