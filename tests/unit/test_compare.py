"""Unit tests of run comparison (direction-aware regressions and the exit code)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetbench.results.compare import Change, compare, exit_code, format_changes, summary_line
from vnetbench.results.model import Sample
from vnetbench.results.stats import noise_floor
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
    assert not [c for c in compare(a, EVIDENCE / "run_layers_b") if c.metric == "rx_drops"]
    changes = compare(a, EVIDENCE / "run_layers_b", include_evidence=True)
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


# ---- repetitions too few to judge, A/A noise floors, evidence samples --------------------------

def _trials(layer: str, values: list[float], metric: str = "rtt_p50_us", unit: str = "us",
            aa: str = "", **labels: str) -> list[Sample]:
    extra = {"aa": aa} if aa else {}
    return [Sample(metric, v, unit, {"layer": layer, "workload": "rr", "repetition": str(i),
                                     **extra, **labels})
            for i, v in enumerate(values)]


def _run(host_a: list[float], host_b: list[float], layer: list[float],
         layer_name: str = "bridge") -> list[Sample]:
    """A run with the baseline as A/A groups a and b and one other layer."""
    return (_trials("host", host_a, aa="a") + _trials("host", host_b, aa="b")
            + _trials(layer_name, layer))


TIGHT = [50.0, 50.1, 49.9, 50.05]
WIDE = [42.0, 58.0, 46.0, 54.0]


def test_three_repetitions_are_not_judged() -> None:
    a = _run(TIGHT[:3], TIGHT[:3], [60.0, 60.1, 59.9])
    b = _run(TIGHT[:3], TIGHT[:3], [120.0, 120.2, 119.8])  # doubled, but 3 vs 3
    changes = {c.labels["layer"]: c for c in compare(a, b)}
    bridge = changes["bridge"]
    assert (bridge.n_a, bridge.n_b) == (3, 3)
    assert bridge.ratio == pytest.approx(2.0, rel=0.01)
    assert not bridge.judgeable and bridge.verdict == "not judged"
    assert not bridge.regression and exit_code([bridge]) == 0
    assert changes["host"].judgeable  # 6 vs 6: both A/A groups pooled
    line = summary_line(list(changes.values()))
    assert line.startswith("1 of 2 groups judged")
    assert "1 not judged" in line and "3 vs 3" in line


def test_summary_line_without_unjudged_groups() -> None:
    a = _run(TIGHT, TIGHT, [60.0, 60.1, 59.9, 60.05])
    b = _run(TIGHT, TIGHT, [72.0, 72.1, 71.9, 72.05])
    line = summary_line(compare(a, b))
    assert line.startswith("2 of 2 groups judged: 1 regression(s)")
    assert "not judged" not in line


def test_aa_floor_makes_a_small_change_not_resolved() -> None:
    """An 8% slower bridge, significant at 4 vs 4, within a baseline that varies +-16%."""
    before, after = [60.0, 60.1, 59.9, 60.05], [64.8, 64.9, 64.7, 64.85]
    (c,) = [c for c in compare(_run(WIDE, WIDE[::-1], before), _run(WIDE, WIDE[::-1], after))
            if c.labels["layer"] == "bridge"]
    assert c.significant and c.beyond_tolerance and c.judgeable
    assert c.floor > 0.08 and not c.beyond_floor
    assert not c.called and c.verdict == "not resolved" and exit_code([c]) == 0
    assert "floor" in c.describe()
    # the same change without A/A groups in the runs: nothing holds it back
    plain = [Sample(s.metric, s.value, s.unit, {k: v for k, v in s.labels.items() if k != "aa"})
             for s in _run(WIDE, WIDE[::-1], before)]
    plain_after = [Sample(s.metric, s.value, s.unit,
                          {k: v for k, v in s.labels.items() if k != "aa"})
                   for s in _run(WIDE, WIDE[::-1], after)]
    (free,) = [c for c in compare(plain, plain_after) if c.labels["layer"] == "bridge"]
    assert free.floor < 0.08 and free.verdict == "REGRESSION"  # only its own (tight) spread


def test_the_larger_of_the_two_runs_floors_applies() -> None:
    run_a = _run(TIGHT, TIGHT[::-1], [60.0, 60.1, 59.9, 60.05])
    run_b = _run(WIDE, WIDE[::-1], [64.8, 64.9, 64.7, 64.85])
    floors = [noise_floor([s for s in run if s.labels["layer"] == "host"]) for run in (run_a, run_b)]
    assert floors[0] is not None and floors[1] is not None
    assert floors[0].floor < floors[1].floor
    for c in compare(run_a, run_b):
        assert c.floor == pytest.approx(floors[1].floor)
    (rev,) = [c for c in compare(run_b, run_a) if c.labels["layer"] == "bridge"]
    assert rev.floor == pytest.approx(floors[1].floor) and rev.verdict == "not resolved"


def test_floors_apply_per_condition() -> None:
    """A wide A/A floor at 8 nodes does not hide a change at 2 nodes."""
    def run(slow: float) -> list[Sample]:
        out = []
        for nodes, host in (("2", TIGHT), ("8", WIDE)):
            out += [s.with_labels(nodes=nodes) for s in _run(host, host[::-1],
                                                              [60.0 * slow, 60.1 * slow,
                                                               59.9 * slow, 60.05 * slow])]
        return out
    changes = {c.labels["nodes"]: c for c in compare(run(1.0), run(1.08))
               if c.labels["layer"] == "bridge"}
    assert changes["2"].verdict == "REGRESSION"
    assert changes["8"].verdict == "not resolved"


def test_a_clear_regression_at_4_vs_4_is_called() -> None:
    a = _run(TIGHT, TIGHT[::-1], [60.0, 61.0, 59.0, 60.5])
    b = _run(TIGHT, TIGHT[::-1], [72.0, 73.0, 71.0, 72.5])
    (c,) = [c for c in compare(a, b) if c.labels["layer"] == "bridge"]
    assert (c.n_a, c.n_b) == (4, 4) and c.judgeable
    assert c.p_value == pytest.approx(2 / 70)  # fully separated: the smallest p of 4 vs 4
    assert c.floor < 0.05 and c.beyond_floor
    assert c.verdict == "REGRESSION"
    assert exit_code(compare(a, b)) == 1
    assert exit_code(compare(a, a)) == 0


@pytest.mark.parametrize("label", ["netns", "device", "cpu", "source", "cgroup"])
def test_evidence_samples_are_compared_only_when_asked(label: str) -> None:
    def run(drops: float) -> list[Sample]:
        return (_trials("bridge", [60.0, 60.1, 59.9, 60.05])
                + _trials("bridge", [drops, drops + 1, drops - 1, drops], metric="rx_drops",
                          unit="count", **{label: "x0"}))
    a, b = run(10.0), run(100.0)
    assert [c.metric for c in compare(a, b)] == ["rtt_p50_us"]
    with_evidence = compare(a, b, include_evidence=True)
    (drops,) = [c for c in with_evidence if c.metric == "rx_drops"]
    assert drops.labels[label] == "x0" and drops.ratio == pytest.approx(10.0, rel=0.05)
    assert drops.regression  # more drops: lower is better
    assert exit_code(compare(a, b)) == 0 and exit_code(with_evidence) == 1


def test_failed_trial_markers_are_not_a_metric() -> None:
    """``trial_failed`` samples are the gate's business (kind "failed"), not a compared group."""
    failed = [Sample("trial_failed", 1.0, "count", {"layer": "bridge", "stage": "build",
                                                    "trial": str(i)}) for i in range(4)]
    a = _trials("bridge", [60.0, 60.1, 59.9, 60.05]) + failed
    b = _trials("bridge", [60.0, 60.1, 59.9, 60.05]) + failed
    changes = compare(a, b)
    assert [c.metric for c in changes] == ["rtt_p50_us"]
    assert "stage" not in changes[0].labels
