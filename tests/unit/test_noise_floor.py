"""Unit tests of the A/A noise floor and the layer verdicts that respect it.

A run measures its baseline (``host``) as two interleaved groups labelled ``aa`` = a/b; the
spread between them is the smallest change the run can resolve. A layer's difference is
called only when it is larger than the factor *and* the floor, and significant; otherwise it
is "not resolved" (or "same" when it is not even beyond the factor).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from vnetbench.results.model import Sample
from vnetbench.results.stats import (
    AA_LABEL,
    Direction,
    Interval,
    LayerRatio,
    NoiseFloor,
    Ratio,
    noise_floor,
    ratio_of_medians,
    ratios_to_baseline,
)

LABELS = {"nodes": "2", "hosts": "1", "workload": "rr"}
WIGGLE = (-1.0, 0.6, -0.3, 1.0, 0.2, -0.7)
"""A fixed zero-centred pattern of relative deviations (scaled by a spread)."""


def _values(centre: float, spread: float, n: int, shift: int = 0) -> list[float]:
    return [centre * (1.0 + spread * WIGGLE[(i + shift) % len(WIGGLE)]) for i in range(n)]


def _samples(layer: str, values: Sequence[float], metric: str = "rtt_p50_us", unit: str = "us",
             aa: str = "", **labels: str) -> list[Sample]:
    extra = {AA_LABEL: aa} if aa else {}
    return [Sample(metric, v, unit, {"layer": layer, **LABELS, "repetition": str(i), **extra,
                                     **labels})
            for i, v in enumerate(values)]


def _baseline(spread: float, n: int = 4, centre: float = 50.0, metric: str = "rtt_p50_us",
              unit: str = "us") -> list[Sample]:
    return (_samples("host", _values(centre, spread, n), metric, unit, aa="a")
            + _samples("host", _values(centre, spread, n, shift=3), metric, unit, aa="b"))


# ---- noise_floor -----------------------------------------------------------------------------

def test_floor_grows_with_the_spread_of_the_baseline() -> None:
    floors = []
    for spread in (0.005, 0.02, 0.08, 0.2):
        nf = noise_floor(_baseline(spread))
        assert nf is not None
        floors.append(nf.floor)
    assert all(f > 0.0 for f in floors)
    assert floors == sorted(floors) and floors[-1] > 4 * floors[0]


def test_floor_is_at_least_the_aa_difference_itself() -> None:
    """Two groups of the same layer 6% apart: no change smaller than that can be resolved."""
    samples = (_samples("host", _values(50.0, 0.002, 4), aa="a")
               + _samples("host", _values(53.0, 0.002, 4), aa="b"))
    nf = noise_floor(samples)
    assert nf is not None
    assert nf.ratio.value == pytest.approx(1.06, rel=0.005)
    assert nf.floor >= 0.06 - 1e-9


def test_floor_compares_group_b_with_group_a() -> None:
    samples = (_samples("host", [100.0, 101.0, 99.0, 100.5], aa="a")
               + _samples("host", [110.0, 111.0, 109.0, 110.5], aa="b"))
    nf = noise_floor(samples)
    assert nf is not None
    assert nf.ratio.value == pytest.approx(110.25 / 100.25)
    assert nf.ratio.n == 4 and nf.ratio.n_baseline == 4
    assert nf.failed  # 10% apart and fully separated at 4 vs 4: the machine drifted
    assert nf.floor >= 0.09


def test_a_steady_baseline_does_not_fail() -> None:
    nf = noise_floor(_baseline(0.01))
    assert nf is not None and not nf.failed


def test_no_floor_without_both_groups() -> None:
    plain = _samples("host", _values(50.0, 0.02, 6))
    assert noise_floor(plain) is None
    only_a = _samples("host", _values(50.0, 0.02, 6), aa="a")
    assert noise_floor(only_a) is None
    assert noise_floor([s for s in _baseline(0.02) if s.labels[AA_LABEL] == "b"]) is None
    assert noise_floor([]) is None


def test_samples_without_the_label_are_ignored() -> None:
    base = _baseline(0.02)
    stray = _samples("host", [500.0, 1.0])  # no aa label: not part of either group
    with_stray = noise_floor(base + stray)
    alone = noise_floor(base)
    assert with_stray is not None and alone is not None
    assert with_stray.floor == pytest.approx(alone.floor)


def test_one_trial_a_group_gives_no_floor_value() -> None:
    nf = noise_floor(_samples("host", [50.0], aa="a") + _samples("host", [51.0], aa="b"))
    assert nf is not None and math.isnan(nf.floor)


# ---- ratios_to_baseline attaches the floor -----------------------------------------------------

def test_ratios_to_baseline_attach_the_baselines_floor() -> None:
    base = _baseline(0.04)
    samples = (base + _samples("bridge", _values(60.0, 0.01, 4))
               + _samples("vxlan", _values(70.0, 0.01, 4)))
    ratios = ratios_to_baseline(samples)
    assert {r.layer for r in ratios} == {"bridge", "vxlan"}
    expected = noise_floor(base)
    assert expected is not None
    for r in ratios:
        assert r.noise is not None
        assert r.floor == pytest.approx(expected.floor)
        assert r.ratio.n_baseline == 8  # both A/A groups pooled for the ratio
        assert r.baseline_median == pytest.approx(50.0, rel=0.05)


def test_each_metric_gets_its_own_floor() -> None:
    base = _baseline(0.01) + _baseline(0.15, centre=9000.0, metric="tps", unit="1/s")
    samples = (base + _samples("bridge", _values(60.0, 0.01, 4))
               + _samples("bridge", _values(8000.0, 0.01, 4), metric="tps", unit="1/s"))
    by_metric = {r.metric: r for r in ratios_to_baseline(samples)}
    assert by_metric["tps"].floor > 3 * by_metric["rtt_p50_us"].floor


def test_no_floor_when_the_baseline_was_not_split() -> None:
    samples = _samples("host", _values(50.0, 0.02, 6)) + _samples("bridge", _values(60.0, 0.02, 4))
    (r,) = ratios_to_baseline(samples)
    assert r.noise is None and math.isnan(r.floor)


def test_floors_stay_with_their_own_conditions() -> None:
    small = _baseline(0.01)
    big = [s.with_labels(nodes="8") for s in _baseline(0.2)]
    samples = (small + big + _samples("bridge", _values(60.0, 0.01, 4))
               + _samples("bridge", _values(60.0, 0.01, 4), nodes="8"))
    floors = {r.labels["nodes"]: r.floor for r in ratios_to_baseline(samples)}
    assert floors["8"] > 3 * floors["2"]


# ---- LayerRatio.verdict -----------------------------------------------------------------------

WIDE_AA = ([40.0, 60.0, 45.0, 55.0], [57.5, 42.5, 52.5, 47.5])
"""A/A groups spread +-20% (same medians): a floor far above 10%."""
TIGHT_AA = ([50.0, 50.1, 49.9, 50.05], [50.02, 49.95, 50.08, 49.97])
"""A/A groups spread +-0.2%: a floor far below 10%."""


def _floor(groups: tuple[list[float], list[float]]) -> NoiseFloor:
    nf = noise_floor(_samples("host", groups[0], aa="a") + _samples("host", groups[1], aa="b"))
    assert nf is not None
    return nf


def test_the_premises_of_the_verdict_tests() -> None:
    assert _floor(WIDE_AA).floor > 0.15
    assert _floor(TIGHT_AA).floor < 0.03
    assert not _floor(WIDE_AA).failed and not _floor(TIGHT_AA).failed


def _layer_ratio(value: float, p_value: float, noise: NoiseFloor | None,
                 metric: str = "rtt_p50_us", n: int = 8, n_baseline: int = 8) -> LayerRatio:
    ratio = Ratio(value, Interval(value * 0.98, value * 1.02), n, n_baseline, p_value)
    direction: Direction = "higher" if metric == "tps" else "lower"
    return LayerRatio("bridge", "host", dict(LABELS), metric, "us", 50.0 * value, 50.0, ratio,
                      direction, noise)


def test_a_difference_within_the_floor_is_not_resolved_even_when_significant() -> None:
    r = _layer_ratio(1.10, p_value=0.001, noise=_floor(WIDE_AA))
    assert r.ratio.significant and r.floor > 0.15
    assert r.verdict() == "not resolved"
    assert _layer_ratio(1 / 1.10, p_value=0.001, noise=_floor(WIDE_AA)).verdict() == "not resolved"


@pytest.mark.parametrize(("metric", "value", "expected"), [
    ("rtt_p50_us", 1.10, "worse"), ("rtt_p50_us", 1 / 1.10, "better"),
    ("tps", 1.10, "better"), ("tps", 1 / 1.10, "worse")])
def test_the_same_difference_beyond_a_small_floor_is_called(metric: str, value: float,
                                                            expected: str) -> None:
    r = _layer_ratio(value, p_value=0.001, noise=_floor(TIGHT_AA), metric=metric)
    assert r.verdict() == expected


def test_a_difference_beyond_the_floor_but_not_significant_is_not_resolved() -> None:
    assert _layer_ratio(1.30, p_value=0.2, noise=_floor(TIGHT_AA)).verdict() == "not resolved"


def test_within_the_factor_is_same_whatever_the_floor() -> None:
    for noise in (None, _floor(TIGHT_AA), _floor(WIDE_AA)):
        assert _layer_ratio(1.02, p_value=0.001, noise=noise).verdict() == "same"
    assert _layer_ratio(1.10, p_value=0.001, noise=_floor(TIGHT_AA)).verdict(1.2) == "same"


def test_no_floor_means_the_factor_alone_decides() -> None:
    assert _layer_ratio(1.10, p_value=0.001, noise=None).verdict() == "worse"
    one_each = noise_floor(_samples("host", [50.0], aa="a") + _samples("host", [51.0], aa="b"))
    r = _layer_ratio(1.10, p_value=0.001, noise=one_each)
    assert math.isnan(r.floor) and r.verdict() == "worse"


def test_no_direction_is_not_resolved_and_nan_is_unknown() -> None:
    r = _layer_ratio(1.5, p_value=0.001, noise=_floor(TIGHT_AA))
    undirected = LayerRatio(r.layer, r.baseline, r.labels, "weird", "", r.median,
                            r.baseline_median, r.ratio, None, r.noise)
    assert undirected.verdict() == "not resolved"
    assert _layer_ratio(math.nan, p_value=math.nan, noise=_floor(TIGHT_AA)).verdict() == "unknown"


def test_verdicts_from_samples_small_and_large_floor() -> None:
    """End to end from samples: a 10% slower layer at 4 vs 8, fully separated."""
    layer = _samples("bridge", [55.0, 55.1, 54.9, 55.05])
    tight_base = (_samples("host", TIGHT_AA[0], aa="a") + _samples("host", TIGHT_AA[1], aa="b"))
    (tight,) = ratios_to_baseline(tight_base + layer)
    assert tight.ratio.significant and tight.floor < 0.03
    assert tight.verdict() == "worse"
    wide_base = (_samples("host", WIDE_AA[0], aa="a") + _samples("host", WIDE_AA[1], aa="b"))
    (wide,) = ratios_to_baseline(wide_base + layer)
    assert wide.floor > 0.15
    assert wide.ratio.beyond(1.05) and wide.verdict() == "not resolved"


def test_too_few_repetitions_is_not_resolved() -> None:
    """2 vs 4 can never be significant, however clear the difference looks."""
    base = (_samples("host", [50.0, 50.2], aa="a") + _samples("host", [50.1, 49.9], aa="b"))
    layer = _samples("bridge", [80.0, 80.1])
    (r,) = ratios_to_baseline(base + layer)
    assert (r.ratio.n, r.ratio.n_baseline) == (2, 4)
    assert not r.ratio.resolvable and not r.ratio.significant
    assert r.ratio.value == pytest.approx(1.6, rel=0.01)
    assert r.verdict() == "not resolved"


def test_identical_layer_is_same() -> None:
    base = _baseline(0.02)
    layer = [Sample(s.metric, s.value, s.unit, {"layer": "bridge", **LABELS}) for s in base]
    (r,) = ratios_to_baseline(base + layer)
    assert r.ratio.value == pytest.approx(1.0) and r.ratio.p_value == 1.0
    assert r.verdict() == "same"


def test_ratio_called_uses_the_larger_of_factor_and_floor() -> None:
    ratio = ratio_of_medians([60.0, 60.5, 59.5, 60.2], [50.0, 50.3, 49.8, 50.1])
    assert ratio.significant
    assert ratio.called(1.05, 0.0) and ratio.called(1.05, 0.15)
    assert not ratio.called(1.05, 0.25) and not ratio.called(1.25, 0.0)


def test_non_finite_values_do_not_change_the_floor() -> None:
    a, b = [50.0, 51.0, 49.0, 50.5], [50.2, 49.6, 50.9, 49.8]
    clean = noise_floor(_samples("host", a, aa="a") + _samples("host", b, aa="b"))
    dirty = noise_floor(_samples("host", [*a, math.nan, math.nan], aa="a")
                        + _samples("host", [*b, math.inf], aa="b"))
    assert clean is not None and dirty is not None
    assert dirty.ratio.n == clean.ratio.n  # the ratio drops them ...
    assert dirty.floor == pytest.approx(clean.floor)  # ... and so should the floor
