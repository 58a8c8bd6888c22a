"""Change points of one series (a headline cell over runs): E-divisive means, noise-aware.

The method is that of Matteson and James (2014, "A nonparametric approach for multiple
change point analysis of multivariate data"), the one the Hunter / Apache Otava line of
tools runs over performance results: for a series x (here log values: ratios and levels are
multiplicative) the split tau maximising

    Q(tau) = m k / (m + k) * ( 2/(m k) sum|x_i - y_j| - 1/(m(m-1)) sum|x_i - x_i'|
                               - 1/(k(k-1)) sum|y_j - y_j'| )

(x the m values before tau, y the k after, every sum over both orders) is where the two
sides' distributions differ most. Its significance is the permutation test of the
*maximised* statistic (the series shuffled, the best split found again, ``PERMUTATIONS``
times, seeded), so that choosing the best split does not make a chance one look real. The
segment whose best split is strongest is tested first; a significant split cuts it in two
and the search goes on in both; it stops when the strongest split left is not significant.

Noise-aware: a significant split is a change point only when the two sides' medians differ by
more than 5 % and more than the runs' own A/A noise floors (the median floor of the runs on
either side), the rule ``compare`` calls a difference by; a smaller one ends the search in
that segment. Each side must hold ``MIN_SIZE`` runs, so the newest one or two runs can never
carry a change point alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

MIN_SIZE = 3
"""Runs each side of a change point needs at least."""
ALPHA = 0.01
"""A split's permutation p-value must be below this."""
PERMUTATIONS = 499
FACTOR = 0.05
"""A change must exceed 5 % (and the runs' floors), as ``compare`` calls a difference."""
SEED = 20261207

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ChangePoint:
    """A change between ``index - 1`` and ``index`` of the series (``index``: the first run
    of the new side)."""

    index: int
    before: float
    """The median of the side before (back in the series' own unit)."""
    after: float
    p_value: float
    floor: float
    """The noise floor the change had to exceed (5 % or the runs' floor, the larger)."""

    @property
    def change(self) -> float:
        """after / before."""
        return self.after / self.before if self.before else math.nan


def _best_split(x: FloatArray, min_size: int) -> tuple[int, float]:
    """(tau, Q(tau)) of the best split of ``x`` (tau: the size of the left side)."""
    n = x.size
    d = np.abs(x[:, None] - x[None, :])
    p = np.zeros((n + 1, n + 1))
    p[1:, 1:] = d.cumsum(axis=0).cumsum(axis=1)
    tau = np.arange(min_size, n - min_size + 1)
    m, k = tau.astype(np.float64), (n - tau).astype(np.float64)
    left = p[tau, tau]
    cross = p[tau, n] - left
    right = p[n, n] - 2.0 * p[tau, n] + left
    q = m * k / n * (2.0 * cross / (m * k) - left / (m * (m - 1)) - right / (k * (k - 1)))
    best = int(np.argmax(q))
    return int(tau[best]), float(q[best])


def _p_value(x: FloatArray, observed: float, min_size: int, rng: np.random.Generator) -> float:
    """Permutation p-value of the maximised statistic ``observed`` for ``x``."""
    beyond = sum(1 for _ in range(PERMUTATIONS)
                 if _best_split(rng.permutation(x), min_size)[1] >= observed - 1e-12)
    return (1.0 + beyond) / (1.0 + PERMUTATIONS)


def change_points(values: Sequence[float], floors: Sequence[float] = (), *,
                  alpha: float = ALPHA, factor: float = FACTOR,
                  min_size: int = MIN_SIZE) -> list[ChangePoint]:
    """The change points of ``values`` (positive; one per run, in order), each beyond 5 % and
    the runs' floors (``floors``: each run's A/A floor, nan where it had none); see the
    module docstring. Non-positive or non-finite values are not a series: none."""
    x = np.asarray([math.log(v) if v > 0 and math.isfinite(v) else math.nan for v in values])
    if np.isnan(x).any() or x.size < 2 * min_size:
        return []
    aa = list(floors) + [math.nan] * (x.size - len(floors))
    rng = np.random.default_rng(SEED)
    segments: list[tuple[int, int]] = [(0, x.size)]
    final: set[tuple[int, int]] = set()
    found: list[ChangePoint] = []
    while True:
        candidates = []
        for lo, hi in segments:
            if (lo, hi) in final or hi - lo < 2 * min_size:
                continue
            tau, q = _best_split(x[lo:hi], min_size)
            candidates.append((q, lo, hi, lo + tau))
        if not candidates:
            break
        q, lo, hi, at = max(candidates)
        p = _p_value(x[lo:hi], q, min_size, rng)
        before, after = float(np.median(x[lo:at])), float(np.median(x[at:hi]))
        side_floors = [f for f in aa[lo:hi] if math.isfinite(f)]
        floor = max(factor, float(np.median(side_floors)) if side_floors else 0.0)
        if p >= alpha:
            break
        if abs(after - before) <= math.log1p(floor):
            final.add((lo, hi))  # a real but smaller change than the runs can tell
            continue
        found.append(ChangePoint(at, math.exp(before), math.exp(after), p, floor))
        segments.remove((lo, hi))
        segments += [(lo, at), (at, hi)]
    return sorted(found, key=lambda c: c.index)
