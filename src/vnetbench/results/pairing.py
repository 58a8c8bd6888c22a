"""Paired statistics: a layer judged against its baseline measured in the same seconds.

A *pair* is what was measured together: one round of interleaved paths (every path's slice of
that round, ``interleave``), or one block of trials (a layer's trial right next to a trial of
the baseline, ABBA order). Samples name their pair with the label ``pair``; in each pair the
layer has one value and the baseline one or two (the A/A paths or trials ``a`` and ``b``).
Pair ids sort in time order (``<session>.<round>``, ``<round>-<layer>``).

For one layer and one metric, with ``d`` = log(layer) - mean(log baseline) in each pair:

* estimate: exp(median d): the typical ratio of a round, robust to a disturbed round;
* interval: a moving-block bootstrap over the pairs in time order (blocks of about n^(1/3)
  pairs keep slow drift of the machine together, so the interval is not too narrow when
  neighbouring rounds are alike);
* p-value: a randomisation test within pairs. Under "the layer is the baseline" nothing tells
  the members of a pair apart but the random order they ran in, so every assignment of the
  role "layer" to one member of each pair is equally likely; p is the share of assignments
  whose signed-rank statistic (Wilcoxon's: the ranks of |d| summed with d's signs) is at
  least as far from 0 as the observed one (all of them when few, else a seeded sample). The
  test is valid however the machine drifts between rounds, since each pair is compared only
  within itself. A rank statistic keeps the median's robustness (one disturbed round is one
  rank) without its blind spot: flipping the pairs below the median does not move a median,
  so a median statistic cannot go below p = 2^(n/2) / 2^n and needs 10 pairs to reach 0.05,
  where the signed ranks reach 2 / 2^n (6 pairs: 0.031).

The A/A control: ``e`` = log b - log a in the pairs holding both baseline members. Its ratio
exp(median e) should be 1; the *floor* (the smallest change the run resolves) is the larger of
its distance from 1 and the half-width of its block-bootstrap interval.

A latency percentile is judged the same way on each round's own percentile (its slice's
histogram): the percentile of histograms merged over all rounds jumps between a machine's
modes (this VM's round trip switches between about 10, 28 and 50 µs), a round's does not.

Pure numpy; deterministic for a seed.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vnetbench.results.model import PAIR_LABEL as PAIR_LABEL

ALPHA = 0.05
MAX_EXACT = 4096
"""Up to this many assignments the randomisation test enumerates them all."""
N_RANDOM = 2000
"""Assignments drawn beyond that (p = (1 + extreme) / (1 + N_RANDOM))."""
N_BOOT = 1000
DEFAULT_SEED = 20240601

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def pair_order(key: str) -> tuple[tuple[int, float, str], ...]:
    """Sort key of a pair id: its numbers as numbers (``2.10`` after ``2.9``)."""
    return tuple((0, float(p), "") if p.isdigit() else (1, 0.0, p)
                 for p in re.split(r"[.\-:]", key))


@dataclass(frozen=True)
class PairedResult:
    """A paired ratio: value, interval, the randomisation p-value and the smallest p-value
    the design could give (too few pairs can never be significant)."""

    value: float
    low: float
    high: float
    p_value: float
    min_p: float
    n: int

    @property
    def resolvable(self) -> bool:
        return self.min_p < ALPHA


NAN_RESULT = PairedResult(math.nan, math.nan, math.nan, math.nan, 1.0, 0)


def block_length(n: int) -> int:
    """Moving-block length for ``n`` pairs: about n^(1/3), at least 1."""
    return max(1, math.floor(math.pow(n, 1.0 / 3.0) + 0.5))


def block_indices(n: int, n_boot: int, rng: np.random.Generator) -> IntArray:
    """``n_boot`` moving-block resamples of 0..n-1 (rows of length n)."""
    b = block_length(n)
    count = math.ceil(n / b)
    starts = rng.integers(0, n - b + 1, size=(n_boot, count))
    idx = (starts[:, :, None] + np.arange(b)[None, None, :]).reshape(n_boot, count * b)
    return np.asarray(idx[:, :n], dtype=np.int64)


def _assignments(k: IntArray, rng: np.random.Generator, n_random: int = N_RANDOM
                 ) -> tuple[IntArray, bool]:
    """Which member plays "layer" in each pair: every assignment (exact) or a sample."""
    total = math.prod(int(x) for x in k)
    if total <= MAX_EXACT:
        rows = np.array(list(itertools.product(*(range(int(x)) for x in k))), dtype=np.int64)
        return rows.reshape(-1, k.size), True
    draws = (rng.random((n_random, k.size)) * k[None, :]).astype(np.int64)
    return np.asarray(draws, dtype=np.int64), False


def _min_p(stats: FloatArray, k: IntArray, exact: bool, n_random: int = N_RANDOM) -> float:
    """The smallest p-value the design could give: with every assignment enumerated, the
    share of them as extreme as the most extreme one; else a bound."""
    if exact:
        top = float(np.max(np.abs(stats))) if stats.size else 0.0
        return float(np.count_nonzero(np.abs(stats) >= top - 1e-12)) / max(stats.size, 1)
    total = math.prod(int(x) for x in k)
    return max(1.0 / total if total > 0 else 1.0, 1.0 / (n_random + 1))


def best_p(pairs: int, members: int) -> float:
    """The smallest p-value ``pairs`` pairs of ``members`` each (a layer and one or two
    baseline labs) can give a difference the same in every pair: with two members the two
    all-one-sign assignments are the extremes (2 of 2^n); with three, the layer's own
    assignment and every one in which either baseline lab is the odd one out, that lab being
    higher (or lower) than the mean of the other two in every pair (1 + 2^n of 3^n)."""
    if pairs < 1 or members < 2:
        return 1.0
    if members == 2:
        return min(1.0, 2.0 / 2.0**pairs)
    return min(1.0, (1.0 + float(members - 1) ** pairs) / float(members) ** pairs)


def fewest_pairs(members: int, alpha: float = ALPHA, limit: int = 64) -> int:
    """Fewest pairs of ``members`` each whose test can call a difference (``best_p``)."""
    return next((n for n in range(1, limit + 1) if best_p(n, members) < alpha), limit + 1)


def signed_ranks(d: FloatArray) -> FloatArray:
    """Per row of ``d`` (assignments x pairs), Wilcoxon's signed-rank sum over its largest
    possible value: the ranks of |d| (1 = smallest) summed with the signs of d, in [-1, 1]."""
    n = d.shape[1]
    if n == 0:
        return np.zeros(d.shape[0], dtype=np.float64)
    ranks = np.argsort(np.argsort(np.abs(d), axis=1, kind="stable"), axis=1) + 1
    total = np.sum(np.sign(d) * ranks, axis=1)
    return np.asarray(total / (n * (n + 1) / 2.0), dtype=np.float64)


def _p_value(stats: FloatArray, observed: float, exact: bool) -> float:
    extreme = int(np.count_nonzero(np.abs(stats) >= abs(observed) - 1e-12))
    if exact:
        return extreme / stats.size
    return (1.0 + extreme) / (1.0 + stats.size)


def _interval(boot: FloatArray, confidence: float) -> tuple[float, float]:
    boot = boot[np.isfinite(boot)]
    if boot.size == 0:
        return math.nan, math.nan
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [alpha, 1.0 - alpha])
    return float(math.exp(low)), float(math.exp(high))


@dataclass(frozen=True)
class ScalarPairs:
    """Per pair (time order): the layer's value and up to two baseline values (nan: absent).
    Values must be positive (they are compared as logs); pairs lacking either side are
    dropped by ``make``."""

    keys: tuple[str, ...]
    members: FloatArray
    """(n, 3): column 0 the layer, columns 1-2 the baseline members."""

    @staticmethod
    def make(layer: Mapping[str, float], base: Mapping[str, Sequence[float]]) -> ScalarPairs:
        keys = sorted((k for k in layer if k in base), key=pair_order)
        rows = []
        kept = []
        for key in keys:
            values = [float(layer[key]), *(float(v) for v in base[key][:2])]
            values += [math.nan] * (3 - len(values))
            if not (values[0] > 0 and any(v > 0 for v in values[1:])):
                continue
            rows.append([v if v > 0 else math.nan for v in values])
            kept.append(key)
        members = np.asarray(rows, dtype=np.float64).reshape(len(rows), 3)
        return ScalarPairs(tuple(kept), members)

    @property
    def n(self) -> int:
        return len(self.keys)

    def differences(self) -> FloatArray:
        """d per pair: log(layer) - mean(log baseline)."""
        logs = np.log(self.members)
        return np.asarray(logs[:, 0] - np.nanmean(logs[:, 1:], axis=1), dtype=np.float64)

    def ratio(self, confidence: float = 0.95, seed: int = DEFAULT_SEED) -> PairedResult:
        if self.n == 0:
            return NAN_RESULT
        d = self.differences()
        observed = float(np.median(d))
        rng = np.random.default_rng(seed)
        low, high = (math.nan, math.nan)
        if self.n >= 2:
            idx = block_indices(self.n, N_BOOT, rng)
            low, high = _interval(np.median(d[idx], axis=1), confidence)
        logs = np.log(self.members)
        valid = np.isfinite(logs)
        k = valid.sum(axis=1).astype(np.int64)
        # member j of pair p for assignment a: the j-th valid column of row p
        order = np.argsort(~valid, axis=1, kind="stable")
        assign, exact = _assignments(k, rng)
        rows = np.arange(self.n)[None, :]
        chosen = logs[rows, order[rows, assign]]
        total = np.nansum(logs, axis=1)[None, :]
        d_perm = chosen - (total - chosen) / (k[None, :] - 1)
        stats = signed_ranks(np.asarray(d_perm, dtype=np.float64))
        statistic = float(signed_ranks(d[None, :])[0])
        return PairedResult(math.exp(observed), low, high, _p_value(stats, statistic, exact),
                            _min_p(stats, k, exact), self.n)

    def aa(self, confidence: float = 0.95, seed: int = DEFAULT_SEED) -> PairedResult:
        """b / a over the pairs holding both baseline members (the A/A control)."""
        both = np.isfinite(self.members[:, 1]) & np.isfinite(self.members[:, 2])
        sub = ScalarPairs(tuple(k for k, b in zip(self.keys, both, strict=True) if b),
                          np.column_stack([self.members[both, 2], self.members[both, 1],
                                           np.full(int(both.sum()), math.nan)]))
        return sub.ratio(confidence, seed)


def floor_of(aa: PairedResult) -> float:
    """The smallest relative change the run resolves, from its A/A result: the larger of
    the A/A ratio's distance from 1 and the half-width of its interval (log-symmetric)."""
    if math.isnan(aa.value) or aa.value <= 0:
        return math.nan
    centre = abs(math.log(aa.value))
    if math.isnan(aa.low) or math.isnan(aa.high):
        return math.nan
    half = max(math.log(aa.high) - math.log(aa.value), math.log(aa.value) - math.log(aa.low))
    return math.exp(max(centre, half)) - 1.0
