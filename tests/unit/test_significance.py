"""Unit tests of the exact permutation test that decides significance.

The promise checked here (design: "Measurement discipline"): on identical populations the
test calls a difference at most 5% of the time at every repetition count, whatever the shape
of the distribution; known differences are found; the few-repetition limits are honest
(2 vs 2 and 3 vs 3 can never be significant) and actually reached on fully separated data.

The statistic is the Wilcoxon rank sum with mid-ranks (module docstring); the reference
implementation below enumerates splits independently to check the exact path.

The false-positive simulations draw 2000 data sets per configuration (a 5% rate has a
standard error of 0.5% there, so the bound 6.5% tells 5% from 10% by far). Monte-Carlo
p-values use ``n_perm=199`` in the simulation: a Monte-Carlo permutation p-value is valid for
any number of permutations, and the seed is the production default, so the same random
splits are used as in a real comparison.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import pytest

from vnetbench.results.significance import (
    ALPHA,
    MAX_EXACT,
    can_be_significant,
    min_p_value,
    min_repetitions_for,
    permutation_p_value,
)

FloatArray = npt.NDArray[np.float64]
Draw = Callable[[np.random.Generator, tuple[int, int]], FloatArray]

DRAWS = 2000
SIM_PERMUTATIONS = 199
SIM_MAX_EXACT = 1000
"""The simulation enumerates exactly up to 1000 splits (6 vs 6, 4 vs 8) and samples beyond
(enumerating 3432-18564 splits per draw would take minutes); the two largest exact sizes of
the production path (8 vs 8, 6 vs 12) are checked on the exact path on their own."""
FP_BOUND = 0.065


def _normal(rng: np.random.Generator, shape: tuple[int, int]) -> FloatArray:
    return rng.normal(100.0, 5.0, size=shape)


def _lognormal(rng: np.random.Generator, shape: tuple[int, int]) -> FloatArray:
    return 100.0 * rng.lognormal(0.0, 0.3, size=shape)


def _heavy(rng: np.random.Generator, shape: tuple[int, int]) -> FloatArray:
    """Student t with 2 degrees of freedom (infinite variance), kept positive."""
    return np.clip(100.0 + 5.0 * rng.standard_t(2.0, size=shape), 1.0, None)


DISTRIBUTIONS: dict[str, Draw] = {"normal": _normal, "lognormal": _lognormal, "heavy-t2": _heavy}


def _false_positive_rate(draw: Draw, n_a: int, n_b: int, seed: int, draws: int = DRAWS, *,
                         n_perm: int = SIM_PERMUTATIONS, max_exact: int = SIM_MAX_EXACT) -> float:
    rng = np.random.default_rng(seed)
    data = draw(rng, (draws, n_a + n_b))
    called = sum(permutation_p_value(row[:n_a], row[n_a:], n_perm=n_perm, max_exact=max_exact)
                 < ALPHA for row in data)
    return called / draws


def _midranks(values: Sequence[float]) -> list[float]:
    ordered = sorted(values)
    first: dict[float, int] = {}
    last: dict[float, int] = {}
    for i, v in enumerate(ordered, start=1):
        first.setdefault(v, i)
        last[v] = i
    return [(first[v] + last[v]) / 2.0 for v in values]


def _reference_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Independent brute-force exact two-sided p-value of the rank-sum statistic."""
    a = [v for v in a if math.isfinite(v)]
    b = [v for v in b if math.isfinite(v)]
    ranks = _midranks([*a, *b])
    n, n_a = len(ranks), len(a)
    centre = n_a * (n + 1) / 2.0
    observed = abs(sum(ranks[:n_a]) - centre)
    splits = list(itertools.combinations(range(n), n_a))
    extreme = sum(1 for idx in splits if abs(sum(ranks[i] for i in idx) - centre) >= observed - 1e-9)
    return extreme / len(splits)


# ---- false positives on identical populations ----------------------------------------------

@pytest.mark.parametrize("n", range(2, 21))
def test_false_positive_rate_equal_sizes(n: int) -> None:
    for k, (name, draw) in enumerate(DISTRIBUTIONS.items()):
        rate = _false_positive_rate(draw, n, n, seed=1000 * n + k)
        assert rate <= FP_BOUND, f"{name} {n} vs {n}: {rate:.3f} false calls"


@pytest.mark.parametrize("n", range(2, 11))
def test_false_positive_rate_against_a_doubled_baseline(n: int) -> None:
    """A layer of n repetitions against an A/A baseline of 2n (both groups pooled)."""
    for k, (name, draw) in enumerate(DISTRIBUTIONS.items()):
        rate = _false_positive_rate(draw, n, 2 * n, seed=5000 + 1000 * n + k)
        assert rate <= FP_BOUND, f"{name} {n} vs {2 * n}: {rate:.3f} false calls"


@pytest.mark.parametrize(("n_a", "n_b"), [(8, 8), (6, 12)])
def test_false_positive_rate_on_the_largest_exact_enumerations(n_a: int, n_b: int) -> None:
    """The production path (default ``max_exact``) enumerates these sizes exactly."""
    assert math.comb(n_a + n_b, n_a) <= MAX_EXACT
    draws = 800
    rate = _false_positive_rate(_heavy, n_a, n_b, seed=77 + n_a, draws=draws, max_exact=MAX_EXACT)
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / draws)  # 7.3%: still far from 10%


@pytest.mark.parametrize("n", [10, 20])
def test_false_positive_rate_with_more_permutations(n: int) -> None:
    rate = _false_positive_rate(_lognormal, n, n, seed=31 + n, n_perm=999)
    assert rate <= FP_BOUND


def test_false_positive_rate_on_counters_with_zeros_and_ties() -> None:
    """Counters (drops, retransmits) have zeros and many ties (mid-ranks): the promise holds."""
    rng = np.random.default_rng(4)
    for n in (4, 10):
        data = rng.poisson(2.0, size=(DRAWS, 2 * n)).astype(np.float64)
        rate = sum(permutation_p_value(r[:n], r[n:], n_perm=SIM_PERMUTATIONS) < ALPHA
                   for r in data) / DRAWS
        assert rate <= FP_BOUND, (n, rate)


# ---- known differences are detected ---------------------------------------------------------

@pytest.mark.parametrize(("n_a", "n_b"), [(4, 4), (3, 6), (6, 3)])
def test_a_20_percent_shift_with_3_percent_noise_is_detected(n_a: int, n_b: int) -> None:
    rng = np.random.default_rng(n_a * 10 + n_b)
    hits = 0
    for _ in range(300):
        a = 120.0 * (1.0 + rng.normal(0.0, 0.03, n_a))
        b = 100.0 * (1.0 + rng.normal(0.0, 0.03, n_b))
        hits += permutation_p_value(a, b) < ALPHA
    assert hits / 300 >= 0.8


def test_a_doubling_is_always_detected_at_4_vs_4() -> None:
    rng = np.random.default_rng(9)
    for _ in range(300):
        a = 200.0 * rng.lognormal(0.0, 0.1, 4)
        b = 100.0 * rng.lognormal(0.0, 0.1, 4)
        assert permutation_p_value(a, b) < ALPHA
        assert permutation_p_value(b, a) < ALPHA


def test_a_small_shift_is_rarely_called_at_4_vs_4() -> None:
    """Power falls with the effect: a 1% shift under 5% noise is almost never called."""
    rng = np.random.default_rng(11)
    calls = sum(permutation_p_value(101.0 * rng.lognormal(0, 0.05, 4),
                                    100.0 * rng.lognormal(0, 0.05, 4)) < ALPHA
                for _ in range(300))
    assert calls / 300 < 0.15


# ---- the few-repetition limits ---------------------------------------------------------------

def test_two_or_three_a_side_can_never_be_significant() -> None:
    assert not can_be_significant(2, 2)
    assert not can_be_significant(3, 3)
    assert not can_be_significant(2, 4)  # 15 splits
    assert min_p_value(2, 2) == pytest.approx(1 / 3)
    assert min_p_value(3, 3) == pytest.approx(0.1)
    # and the test agrees: the most extreme 3 vs 3 data are not significant
    assert permutation_p_value([1.0, 2.0, 3.0], [10.0, 11.0, 12.0]) >= ALPHA


def test_four_a_side_or_three_against_six_can_be_significant() -> None:
    assert can_be_significant(4, 4)
    assert can_be_significant(3, 6)
    assert can_be_significant(6, 3)
    assert min_p_value(4, 4) == pytest.approx(2 / 70)
    assert min_p_value(3, 6) == min_p_value(6, 3) <= 2 / 84
    assert not can_be_significant(4, 4, alpha=0.02)


def test_min_p_value_degenerate_groups() -> None:
    assert min_p_value(0, 5) == 1.0
    assert min_p_value(1, 1) == 1.0
    assert not can_be_significant(0, 100)


def _separated_p(n_a: int, n_b: int) -> float:
    return permutation_p_value([1000.0 + i for i in range(n_a)], [100.0 + i for i in range(n_b)])


@pytest.mark.parametrize("n_other", [1, 2, 3, 4, 6, 8, 20])
def test_min_repetitions_for_is_what_the_test_can_reach(n_other: int) -> None:
    """The fewest repetitions whose most extreme data the test calls, and one fewer not."""
    n = min_repetitions_for(n_other)
    assert can_be_significant(n, n_other) and not can_be_significant(n - 1, n_other)
    assert _separated_p(n, n_other) < ALPHA
    assert n == 1 or _separated_p(n - 1, n_other) >= ALPHA


def test_min_repetitions_for_the_documented_examples() -> None:
    assert min_repetitions_for(4) <= 4  # 4 against 4 can be significant
    assert min_repetitions_for(6) <= 3  # 3 against a baseline of 6 can
    assert min_repetitions_for(3) > 3 and min_repetitions_for(2) > 2


def test_min_repetitions_for_beyond_the_limit() -> None:
    assert min_repetitions_for(1, limit=10) == 11


SIZES = [(1, 5), (5, 1), (2, 2), (2, 5), (3, 3), (3, 6), (6, 3), (4, 4), (4, 7), (5, 5),
         (6, 6), (7, 2), (8, 8), (6, 12)]


@pytest.mark.parametrize(("n_a", "n_b"), SIZES)
def test_fully_separated_data_reach_min_p_value(n_a: int, n_b: int) -> None:
    rng = np.random.default_rng(n_a * 100 + n_b)

    def group(centre: float, n: int) -> list[float]:
        return list(centre * (1.0 + rng.uniform(0.0, 0.05, n)))

    smallest = min_p_value(n_a, n_b)
    assert permutation_p_value(group(1000.0, n_a), group(100.0, n_b)) == pytest.approx(smallest)
    assert permutation_p_value(group(100.0, n_a), group(1000.0, n_b)) == pytest.approx(smallest)
    called = permutation_p_value(group(1000.0, n_a), group(100.0, n_b)) < ALPHA
    assert called == can_be_significant(n_a, n_b)


@pytest.mark.parametrize(("n_a", "n_b"), [(2, 2), (3, 3), (4, 4), (3, 6), (5, 5), (4, 9)])
def test_no_p_value_below_the_minimum(n_a: int, n_b: int) -> None:
    rng = np.random.default_rng(3)
    floor = min_p_value(n_a, n_b)
    for _ in range(200):
        x = rng.lognormal(0.0, 1.0, n_a + n_b)
        p = permutation_p_value(x[:n_a], x[n_a:])
        assert floor - 1e-12 <= p <= 1.0


# ---- agreement with an independent computation --------------------------------------------

@pytest.mark.parametrize(("n_a", "n_b"), [(3, 3), (4, 4), (3, 6), (5, 4), (6, 6)])
def test_exact_path_matches_a_brute_force_reference(n_a: int, n_b: int) -> None:
    rng = np.random.default_rng(n_a + 7 * n_b)
    for _ in range(10):
        x = 100.0 * rng.lognormal(0.0, 0.2, n_a + n_b)
        a, b = list(x[:n_a]), list(x[n_a:])
        assert permutation_p_value(a, b) == pytest.approx(_reference_p(a, b))


def test_exact_path_with_ties_matches_the_reference() -> None:
    rng = np.random.default_rng(8)
    for n_a, n_b in [(4, 4), (3, 6), (5, 5)]:
        for _ in range(10):
            x = rng.integers(0, 4, n_a + n_b).astype(np.float64)  # many ties, zeros
            a, b = list(x[:n_a]), list(x[n_a:])
            assert permutation_p_value(a, b) == pytest.approx(_reference_p(a, b))


def test_monte_carlo_path_approximates_the_exact_p_value() -> None:
    rng = np.random.default_rng(21)
    for _ in range(5):
        x = 100.0 * rng.lognormal(0.0, 0.2, 14)
        shift = np.r_[np.full(7, 1.08), np.ones(7)]
        a, b = x[:7] * shift[:7], x[7:]
        exact = permutation_p_value(a, b)
        sampled = permutation_p_value(a, b, max_exact=0, n_perm=20_000)
        assert abs(sampled - exact) < 0.01, (exact, sampled)
        assert sampled >= 1.0 / 20_001


def test_monte_carlo_path_is_seeded() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(100.0, 5.0, 30)
    a, b = x[:15] + 1.0, x[15:]
    p1 = permutation_p_value(a, b, n_perm=999, seed=1)
    assert p1 == permutation_p_value(a, b, n_perm=999, seed=1)
    others = [permutation_p_value(a, b, n_perm=999, seed=s) for s in range(2, 8)]
    assert len({p1, *others}) > 1  # the seed decides the random splits
    assert all(abs(p - p1) < 0.1 for p in others)  # ... within Monte-Carlo error
    assert all(1 / 1000 <= p <= 1.0 for p in (p1, *others))


def test_the_statistic_is_scale_free_for_positive_values() -> None:
    """Multiplying every value by a constant (another unit) gives the same p-value."""
    a, b = [10.0, 12.0, 11.0, 13.0], [9.0, 9.5, 12.5, 8.0]
    p = permutation_p_value(a, b)
    assert permutation_p_value([v * 1000 for v in a], [v * 1000 for v in b]) == pytest.approx(p)
    assert permutation_p_value(b, a) == pytest.approx(p)  # two-sided: symmetric


def test_one_disturbed_trial_weighs_no_more_than_the_largest() -> None:
    """A 50x outlier in the slower group changes nothing the largest value did not."""
    a, b = [60.0, 61.0, 59.5, 60.5, 62.0], [58.0, 59.0, 60.2, 58.5, 59.2]
    disturbed = [*a[:-1], 62.0 * 50]
    assert permutation_p_value(disturbed, b) == pytest.approx(permutation_p_value(a, b))


# ---- zero, negative and non-finite values ---------------------------------------------------

def test_zero_values_are_kept() -> None:
    a, b = [0.0, 1.0, 2.0, 3.0], [10.0, 11.0, 12.0, 13.0]
    assert permutation_p_value(a, b) == pytest.approx(2 / 70)  # no log(0) warning either
    a2, b2 = [0.0, 30.0, 31.0, 29.0], [20.0, 21.0, 22.0, 19.0]
    p = permutation_p_value(a2, b2)
    assert p == pytest.approx(_reference_p(a2, b2))
    assert p != pytest.approx(permutation_p_value(a2[1:], b2))  # the zero was not dropped
    assert p > 0.2  # the zero pulls group a back among b: no difference called


def test_negative_values_are_kept() -> None:
    a, b = [-5.0, -4.0, -6.0, -5.5], [5.0, 4.0, 6.0, 5.5]
    assert permutation_p_value(a, b) == pytest.approx(2 / 70)
    c, d = [-1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 1.5, 2.5, 0.5]
    assert permutation_p_value(c, d) == pytest.approx(_reference_p(c, d))
    assert 0.0 < permutation_p_value(c, d) <= 1.0


def test_non_finite_values_are_dropped() -> None:
    a, b = [10.0, 11.0, 12.0, 13.0], [20.0, 21.0, 22.0, 23.0]
    clean = permutation_p_value(a, b)
    assert permutation_p_value([*a, math.nan], [*b, math.inf, -math.inf]) == pytest.approx(clean)
    assert permutation_p_value([math.nan, math.inf], b) == 1.0
    assert permutation_p_value([], b) == 1.0


def test_identical_groups_give_one() -> None:
    assert permutation_p_value([5.0, 6.0, 7.0], [5.0, 6.0, 7.0]) == 1.0
    assert permutation_p_value([5.0] * 4, [5.0] * 4) == 1.0
    assert permutation_p_value([0.0] * 6, [0.0] * 6) == 1.0
    assert permutation_p_value([3.0, 1.0, 2.0] * 5, [1.0, 2.0, 3.0] * 5) == 1.0  # Monte-Carlo size
