"""Unit tests of run comparison (direction-aware regressions and the exit code)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetbench.results.compare import Change, compare, exit_code, format_changes
from vnetbench.results.model import Sample
from vnetbench.results.store import load_run

EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "evidence"


def _find(changes: list[Change], layer: str, workload: str, metric: str) -> Change:
    return next(c for c in changes if c.labels["layer"] == layer
                and c.labels["workload"] == workload and c.metric == metric
                and not c.labels.get("netns"))


@pytest.fixture(scope="module")
def changes() -> list[Change]:
    a = [s for s in load_run(EVIDENCE / "run_layers").samples if "netns" not in s.labels]
    b = [s for s in load_run(EVIDENCE / "run_layers_b").samples if "netns" not in s.labels]
    return compare(a, b)


def test_latency_increase_is_a_regression(changes: list[Change]) -> None:
    c = _find(changes, "vxlan", "rr", "rtt_p50_us")
    assert c.ratio == pytest.approx(1.2)
    assert c.ci.low > 1.15 and c.ci.high < 1.25
    assert c.significant and c.beyond_tolerance and c.direction == "lower"
    assert c.regression and c.verdict == "REGRESSION"
    assert c.median_a == pytest.approx(60.0) and c.median_b == pytest.approx(72.0)


def test_throughput_increase_is_an_improvement(changes: list[Change]) -> None:
    c = _find(changes, "bridge", "rr", "tps")
    assert c.ratio == pytest.approx(1.1)
    assert c.improvement and not c.regression and c.verdict == "improved"


def test_unchanged_groups_are_not_called(changes: list[Change]) -> None:
    c = _find(changes, "host", "rr", "rtt_p99_us")
    assert c.ratio == pytest.approx(1.0) and not c.called and c.verdict == "same"


def test_exit_code_and_tolerance() -> None:
    a, b = EVIDENCE / "run_layers", EVIDENCE / "run_layers_b"
    assert exit_code(compare(a, b, tolerance=0.05)) == 1
    assert exit_code(compare(a, a)) == 0
    assert exit_code(compare(a, b, tolerance=0.25)) == 0


def test_lower_throughput_is_a_regression() -> None:
    def run(tps: float) -> list[Sample]:
        return [Sample("goodput_bps", tps * k, "bit/s", {"layer": "bridge"})
                for k in (0.99, 1.0, 1.01, 1.005, 0.995, 1.0)]
    (c,) = compare(run(10e9), run(8e9))
    assert c.direction == "higher" and c.regression and exit_code([c]) == 1
    (up,) = compare(run(8e9), run(10e9))
    assert up.improvement and exit_code([up]) == 0


def test_format_changes_lists_regressions_first(changes: list[Change]) -> None:
    text = format_changes(changes, only_called=True)
    first = text.splitlines()[0]
    assert "REGRESSION" in first
    assert "same" not in text
    with pytest.raises(ValueError):
        compare([], [], tolerance=-1)


def test_collector_groups_stay_apart() -> None:
    a = load_run(EVIDENCE / "run_layers")
    changes = compare(a, EVIDENCE / "run_layers_b")
    drops = [c for c in changes if c.metric == "rx_drops" and c.labels["layer"] == "vxlan"]
    assert {(c.labels["netns"], c.labels["device"]) for c in drops} == {
        ("n0", "vxlan0"), ("n1", "vxlan0"), ("n0", "veth0"), ("n1", "veth0")}


def test_compare_accepts_rundata() -> None:
    run = load_run(EVIDENCE / "run_sweep")
    assert all(not c.called for c in compare(run, run))


def test_sweep_axes_form_their_own_groups() -> None:
    def run(slow: float) -> list[Sample]:
        return [Sample("rtt_p50_us", v * k, "us", {"layer": "host", "delay": d, "trial": str(i)})
                for i, k in enumerate((0.99, 1.0, 1.01, 1.0, 0.995, 1.005))
                for d, v in (("0ms", 50.0), ("10ms", 20_000.0 * slow))]
    changes = {c.labels["delay"]: c for c in compare(run(1.0), run(1.3))}
    assert set(changes) == {"0ms", "10ms"}
    assert not changes["0ms"].called
    assert changes["10ms"].regression and changes["10ms"].ratio == pytest.approx(1.3)
    assert "trial" not in changes["0ms"].labels
