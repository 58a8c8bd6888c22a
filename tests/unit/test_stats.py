"""Unit tests of vnetbench.results.stats on hand-computed values and the recorded runs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from vnetbench.results import stats
from vnetbench.results.model import Sample
from vnetbench.results.store import load_run

EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "evidence"


@pytest.fixture(scope="module")
def layers() -> list[Sample]:
    return load_run(EVIDENCE / "run_layers").samples


def test_median_mean_cv() -> None:
    assert stats.median([3.0, 1.0, 2.0, 10.0]) == 2.5
    assert stats.mean([1.0, 2.0, 3.0, float("nan")]) == 2.0
    # std(ddof=1) of [9, 10, 11] is 1, mean 10
    assert stats.coefficient_of_variation([9.0, 10.0, 11.0]) == pytest.approx(0.1)
    assert math.isnan(stats.coefficient_of_variation([5.0]))
    assert math.isnan(stats.median([]))


def test_bootstrap_ci_is_seeded_and_covers_the_median() -> None:
    rng = np.random.default_rng(1)
    values = list(rng.normal(100.0, 5.0, 40))
    a = stats.bootstrap_ci(values, seed=7)
    b = stats.bootstrap_ci(values, seed=7)
    assert a == b
    assert a.low < stats.median(values) < a.high
    assert 0.5 < a.width < 8.0
    wide = stats.bootstrap_ci(values[:8], seed=7)
    assert wide.width > a.width
    one = stats.bootstrap_ci([4.2])
    assert (one.low, one.high) == (4.2, 4.2)


def test_modified_z_scores_and_outliers() -> None:
    values = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 30.0]
    # median 10, MAD 0.05: score of 30 is 0.6745 * 20 / 0.05
    scores = stats.modified_z_scores(values)
    assert scores[6] == pytest.approx(269.8)
    assert scores[1] == pytest.approx(1.349)
    assert stats.outlier_indices(values) == [6]
    assert stats.outlier_indices([1.0, 1.0, 1.0, 1.0]) == []
    # MAD = 0 falls back to the mean absolute deviation
    assert stats.outlier_indices([5.0, 5.0, 5.0, 5.0, 50.0]) == [4]
    # three or four values: the closest pair sets the MAD, so nothing is called an outlier
    assert stats.outlier_indices([40.0, 40.01, 44.0]) == []
    assert stats.outlier_indices([40.0, 40.01, 40.02, 44.0]) == []
    assert stats.outlier_indices([40.0, 40.01, 40.02, 40.0, 44.0]) == [4]


def test_ratio_of_medians_vxlan_is_one_and_a_half(layers: list[Sample]) -> None:
    def vals(layer: str) -> list[float]:
        return [s.value for s in layers if s.metric == "rtt_p50_us"
                and s.labels["layer"] == layer and s.labels["workload"] == "rr"]
    r = stats.ratio_of_medians(vals("vxlan"), vals("host"))
    assert r.value == pytest.approx(1.5)
    assert r.ci.low < 1.5 < r.ci.high
    assert r.ci.low > 1.4 and r.ci.high < 1.6
    assert r.significant and r.called(1.05)
    same = stats.ratio_of_medians(vals("host"), vals("host"))
    assert same.value == 1.0 and not same.called()
    lonely = stats.ratio_of_medians([2.0], [1.0, 1.0])
    assert lonely.value == 2.0 and not lonely.significant


def test_called_needs_factor_and_significance() -> None:
    small = stats.ratio_of_medians([1.02, 1.021, 1.019, 1.02, 1.022], [1.0, 1.001, 0.999, 1.0])
    assert small.significant and not small.called(1.05)
    noisy = stats.ratio_of_medians([1.0, 3.0, 0.5, 2.0], [1.0, 0.4, 2.5, 1.2])
    assert not noisy.significant and not noisy.called(1.05)


def test_min_repetitions() -> None:
    assert stats.min_repetitions(0.95) == 6
    assert stats.min_repetitions(0.99) == 8
    assert stats.min_repetitions(0.90) == 5


@pytest.mark.parametrize(("metric", "unit", "expected"), [
    ("rtt_p99_us", "us", "lower"), ("tps", "1/s", "higher"), ("goodput_bps", "bit/s", "higher"),
    ("cpu_user_s", "s", "lower"), ("cpu_us_per_tx", "us", "lower"), ("rx_drops", "", "lower"),
    ("tcp_retrans_segs", "count", "lower"), ("rx_pps", "packets/s", "higher"),
    ("mystery", "", None), ("elapsed", "ms", "lower"),
    ("rounds_per_s", "1/s", "higher"),  # the barrier's rate: not a time for its "_s"
])
def test_better_direction(metric: str, unit: str, expected: str | None) -> None:
    assert stats.better_direction(metric, unit) == expected


def test_summarize_groups(layers: list[Sample]) -> None:
    table = stats.summarize([s for s in layers if "netns" not in s.labels])
    keys = {g.key for g in table}
    assert ("vxlan", "2", "2", "rr", "rtt_p50_us") in keys
    g = next(g for g in table if g.key == ("vxlan", "2", "2", "rr", "rtt_p50_us"))
    assert g.n == 7 and g.median == pytest.approx(60.0)
    assert g.cv == pytest.approx(0.0136, abs=0.001)
    wg = next(g for g in table if g.key == ("wireguard", "2", "2", "rr", "rtt_p99_us"))
    assert wg.outliers == (3,)
    assert [g.labels["layer"] for g in table][:1] == ["bridge"]


def test_ratios_to_baseline_and_verdicts(layers: list[Sample]) -> None:
    plain = [s for s in layers if "netns" not in s.labels]
    ratios = stats.index_by(stats.ratios_to_baseline(plain), "workload", "metric")
    rtt = ratios[("vxlan", "rr", "rtt_p50_us")]
    assert rtt.ratio.value == pytest.approx(1.5) and rtt.verdict() == "worse"
    gp = ratios[("vxlan", "stream", "goodput_bps")]
    assert gp.ratio.value == pytest.approx(0.5) and gp.verdict() == "worse"
    assert ratios[("bridge", "rr", "tps")].ratio.value == pytest.approx(0.9)
    assert ("host", "rr", "tps") not in ratios
    # a layer better than native is "better" in a direction-aware way
    faster = [Sample("rtt_p50_us", v, "us", {"layer": la, "metric": "x"})
              for la, vs in (("host", (10, 10.1, 9.9, 10.05)), ("fast", (5, 5.1, 4.9, 5.05)))
              for v in vs]
    (only,) = stats.ratios_to_baseline(faster)
    assert only.verdict() == "better"
