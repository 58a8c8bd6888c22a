"""Significance of a difference between two groups of repetitions: an exact permutation test.

Why a permutation test: each repetition (trial) is one independent measurement of a layer,
and a run has few of them (2-20). A percentile bootstrap of a ratio of medians at n = 2 has
only three distinct medians per side and called identical populations different 29% of the
time. A permutation test is exact for exchangeable data at every n: on identical populations
it calls a difference at most ``alpha`` of the time, by construction. Its price is honesty:
with very few repetitions no split of the data can be extreme enough (2 vs 2 has only 6
splits), and :func:`can_be_significant` says so instead of starring anything.

The statistic is the Wilcoxon rank sum (mid-ranks for ties): one disturbed trial (another
job woke up, a 50x p99) moves it no more than any other trial that is merely the largest,
so the test keeps its power on a noisy machine, and it is the same for every metric's scale.

* up to ``MAX_EXACT`` splits every split is enumerated (p = share of splits at least as
  extreme as the observed one, the observed split included);
* beyond, ``n_perm`` random splits are drawn with a seed and p = (1 + extreme) / (1 + n_perm),
  which is still a valid p-value.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

ALPHA = 0.05
MAX_EXACT = 20_000
DEFAULT_PERMUTATIONS = 10_000
DEFAULT_SEED = 20240601
_TOL = 1e-9

FloatArray = npt.NDArray[np.float64]


def _finite(values: Iterable[float]) -> FloatArray:
    arr = np.asarray(list(values), dtype=np.float64)
    return arr[np.isfinite(arr)]


def min_p_value(n_a: int, n_b: int) -> float:
    """The smallest two-sided p-value the exact rank-sum test can give for n_a vs n_b: both
    complete separations (a all lowest, a all highest) are equally extreme."""
    if n_a < 1 or n_b < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(n_a + n_b, n_a))


def can_be_significant(n_a: int, n_b: int, alpha: float = ALPHA) -> bool:
    """Whether n_a vs n_b repetitions could ever give p < alpha (2 vs 2 or 3 vs 3: never)."""
    return min_p_value(n_a, n_b) < alpha


def min_repetitions_for(n_other: int, alpha: float = ALPHA, limit: int = 50) -> int:
    """Fewest repetitions of one group that can be significant against ``n_other`` of the
    other (e.g. 3 against a baseline of 6, 4 against 4)."""
    for n in range(1, limit + 1):
        if can_be_significant(n, n_other, alpha):
            return n
    return limit + 1


def midranks(values: FloatArray) -> FloatArray:
    """Ranks 1..n, tied values sharing the mean of their ranks."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.arange(1, values.size + 1, dtype=np.float64)
    uniq, inverse = np.unique(values, return_inverse=True)
    if uniq.size == values.size:
        return ranks
    sums = np.bincount(inverse, weights=ranks)
    counts = np.bincount(inverse)
    return np.asarray((sums / counts)[inverse], dtype=np.float64)


def permutation_p_value(a: Iterable[float], b: Iterable[float], *,
                        n_perm: int = DEFAULT_PERMUTATIONS, seed: int = DEFAULT_SEED,
                        max_exact: int = MAX_EXACT) -> float:
    """Two-sided permutation p-value that ``a`` and ``b`` come from one population.

    Non-finite values are dropped; no value on a side gives 1.0, and so does a split whose
    rank sum is exactly the expected one (e.g. identical groups).
    """
    xa, xb = _finite(a), _finite(b)
    n_a, n_b = int(xa.size), int(xb.size)
    if n_a == 0 or n_b == 0:
        return 1.0
    n = n_a + n_b
    ranks = midranks(np.concatenate([xa, xb]))
    centre = n_a * (n + 1) / 2.0
    observed = abs(float(ranks[:n_a].sum()) - centre)
    if observed < _TOL:
        return 1.0
    if math.comb(n, n_a) <= max_exact:
        idx = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), n_a)),
                          dtype=np.int64).reshape(-1, n_a)
        sums = ranks[idx].sum(axis=1)
        return float(np.count_nonzero(_extreme(sums, centre, observed))) / float(sums.size)
    rng = np.random.default_rng(seed)
    count = 0
    done = 0
    batch = max(1, min(n_perm, 2_000_000 // n))
    while done < n_perm:
        rows = min(batch, n_perm - done)
        chosen = np.argpartition(rng.random((rows, n)), n_a - 1, axis=1)[:, :n_a]
        count += int(np.count_nonzero(_extreme(ranks[chosen].sum(axis=1), centre, observed)))
        done += rows
    return (1.0 + count) / (1.0 + n_perm)


def _extreme(sums: FloatArray, centre: float, observed: float) -> npt.NDArray[np.bool_]:
    return np.asarray(np.abs(sums - centre) >= observed - _TOL, dtype=np.bool_)


EXACT_TREND_MAX = 8
"""Up to this many points the trend test enumerates every permutation (8! = 40320)."""


def rank_correlation_test(xs: Iterable[float], ys: Iterable[float], *,
                          n_resamples: int = 20000, seed: int = 1) -> tuple[float, float]:
    """Spearman's rank correlation of ``ys`` with ``xs`` and its two-sided permutation
    p-value (exact up to ``EXACT_TREND_MAX`` points, else ``n_resamples`` random orders).

    Repeated x values (repetitions at one node count) share their midrank, so a curve
    measured once per point and one measured several times are tested the same way. With
    1 value per point, 5 points in a strictly monotone order give p = 2/120 = 0.017; 4
    points can never be significant at 0.05 (2/24).
    """
    x = np.asarray(list(xs), dtype=np.float64)
    y = np.asarray(list(ys), dtype=np.float64)
    if x.size != y.size:
        raise ValueError("xs and ys must have the same length")
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < 3 or float(np.ptp(x)) == 0.0 or float(np.ptp(y)) == 0.0:
        return math.nan, 1.0
    rx, ry = midranks(x), midranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    scale = math.sqrt(float(np.sum(rx * rx)) * float(np.sum(ry * ry)))
    observed = float(np.sum(rx * ry)) / scale
    if ry.size <= EXACT_TREND_MAX:
        perms = np.array(list(itertools.permutations(ry)), dtype=np.float64)
    else:
        rng = np.random.default_rng(seed)
        perms = np.array([rng.permutation(ry) for _ in range(n_resamples)], dtype=np.float64)
    stats = (perms @ rx) / scale
    extreme = np.abs(stats) >= abs(observed) - 1e-12
    p = float(np.count_nonzero(extreme)) / stats.size
    if ry.size > EXACT_TREND_MAX:
        p = (float(np.count_nonzero(extreme)) + 1.0) / (stats.size + 1.0)
    return observed, p
