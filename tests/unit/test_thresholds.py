"""A scenario's ``thresholds``: each layer's ratio to the baseline held to a limit. The
rule (``report.thresholds``): a ratio past its limit fails, clear or within the noise (said
either way); a pass by a margin the run does not resolve is a note; an emulated layer is not
judged; a limit judged against nothing fails. Then the same through ``vnetbench run`` (the
fake backend, no root): exit 1, one line per breach, run.json and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.fake_backend import fake_backend
from vnetbench.cli.main import main
from vnetbench.errors import ScenarioError
from vnetbench.report.thresholds import judge
from vnetbench.results.model import Sample
from vnetbench.results.stats import better_direction
from vnetbench.scenario.model import THRESHOLD_METRICS
from vnetbench.scenario.sweep import expand

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8]


def _samples(layer: str, values: list[float], metric: str = "rtt_p50_us",
             workload: str = "rr", aa: str = "") -> list[Sample]:
    unit = "us" if metric.endswith("_us") else "bit/s"
    out = []
    for rep, value in enumerate(values):
        labels = {"layer": layer, "nodes": "2", "hosts": "1", "workload": workload,
                  "repetition": str(rep), "trial": f"{layer}{aa}{rep}"}
        if aa:
            labels["aa"] = aa
        out.append(Sample(metric, value, unit, labels))
    return out


def _run(**layers: list[float]) -> list[Sample]:
    samples = _samples("host", BASE, aa="a") + _samples("host", [v * 1.001 for v in BASE],
                                                        aa="b")
    for layer, values in layers.items():
        samples += _samples(layer, values)
    return samples


def _by_layer(verdict: object) -> dict[str, object]:
    return {j.layer: j for j in verdict.judged}  # type: ignore[attr-defined]


def test_the_rule_for_a_maximum() -> None:
    samples = _run(far=[200.0 + k for k in range(7)],                 # x2: clear
                   near=[151.0, 120.0, 185.0, 140.0, 165.0, 128.0, 172.0],  # ~x1.51, noisy
                   close=[148.0, 146.0, 150.0, 152.0, 147.0, 149.0, 151.0],  # ~x1.49
                   fine=[110.0, 111.0, 109.0, 110.5, 109.5, 110.2, 109.8])   # x1.10
    verdict = judge(samples, [], {"rr.rtt_p50_us": 1.5})
    got = _by_layer(verdict)
    far, near, close, fine = (got[n] for n in ("far", "near", "close", "fine"))
    assert far.outcome == "breach" and far.note.startswith("clear: its 95% interval")
    assert near.outcome == "breach" and near.note.startswith("within the noise: ")
    assert "The run cannot tell this from a pass" in near.note
    assert close.outcome == "close" and "reaches past" in close.note
    assert fine.outcome == "pass"
    lines = verdict.lines()
    fails = [line for line in lines if line.startswith("FAIL")]
    assert len(fails) == 2 and all("is above the limit (at most x1.5 host)" in x for x in fails)
    assert any(line.startswith("NOTE rr.rtt_p50_us: close x1.4") for line in lines)
    assert lines[-1].startswith("thresholds FAILED: 1 limit(s), 4 layer ratio(s) judged: "
                                "2 breach(es) (1 clear), 2 within their limit")
    assert not verdict.passed


def test_a_minimum_for_a_rate() -> None:
    base = _samples("host", [9e9] * 7, "goodput_bps", "stream", aa="a")
    base += _samples("host", [9.01e9] * 7, "goodput_bps", "stream", aa="b")
    slow = _samples("slow", [6e9 + k * 1e6 for k in range(7)], "goodput_bps", "stream")
    fast = _samples("fast", [8.9e9 + k * 1e6 for k in range(7)], "goodput_bps", "stream")
    verdict = judge([*base, *slow, *fast], [], {"stream.goodput_bps": 0.8})
    got = _by_layer(verdict)
    assert got["slow"].outcome == "breach" and got["fast"].outcome == "pass"
    assert "is below the limit (at least x0.8 host)" in got["slow"].line()


def test_a_passing_run_and_a_limit_judged_against_nothing() -> None:
    samples = _run(fine=[110.0, 111.0, 109.0, 110.5, 109.5, 110.2, 109.8])
    ok = judge(samples, [], {"rr.rtt_p50_us": 1.5})
    assert ok.passed and ok.lines() == [
        "thresholds passed: 1 limit(s), 1 layer ratio(s) judged: 0 breach(es) (0 clear), "
        "1 within their limit"]
    nothing = judge(samples, [], {"rr.rtt_p50_us": 1.5, "stream.goodput_bps": 0.8})
    assert not nothing.passed and list(nothing.unjudged) == ["stream.goodput_bps"]
    assert any(line.startswith("FAIL stream.goodput_bps: no layer has a goodput_bps of stream")
               for line in nothing.lines())


def test_an_emulated_layer_is_not_judged() -> None:
    samples = _run(**{"vm-bridge": [400.0 + k for k in range(7)],
                      "fine": [110.0, 111.0, 109.0, 110.5, 109.5, 110.2, 109.8]})
    env = {"layers": {"vm-bridge": {"vm": {"emulated_cpu": True}}}}
    verdict = judge(samples, [], {"rr.rtt_p50_us": 1.5}, environment=env)
    assert verdict.passed
    vm = _by_layer(verdict)["vm-bridge"]
    assert vm.outcome == "not judged" and "emulated CPU" in vm.line()


def test_every_metric_a_limit_may_name_has_a_direction() -> None:
    assert all(better_direction(m) in ("lower", "higher") for m in THRESHOLD_METRICS)


@pytest.mark.parametrize(("thresholds", "says"), [
    ({"rr.rtt_p5_us": 1.5}, "'rtt_p5_us' is not a metric a limit can judge (did you mean "
                            "rtt_p50_us?)"),
    ({"strem.goodput_bps": 1}, "unknown workload 'strem' (did you mean stream?)"),
    ({"stream.goodput_bps": 1}, "thresholds: stream.goodput_bps: the scenario runs no stream"),
    ({"rr.tps": 0}, "rr.tps: the limit is a ratio to the baseline, a number > 0"),
    ({"rr.tps": True}, "thresholds.rr.tps: true is not a number"),
    ([1.5], "give WORKLOAD.METRIC: LIMIT pairs"),
])
def test_bad_thresholds_are_one_line(thresholds: object, says: str) -> None:
    with pytest.raises(ScenarioError) as info:
        expand({"layers": ["host", "bridge"], "workloads": ["rr"], "thresholds": thresholds},
               "t.yaml")
    assert says in str(info.value) and "\n" not in str(info.value)


def test_thresholds_need_the_baseline_and_take_both_forms() -> None:
    with pytest.raises(ScenarioError, match="which layers does not list"):
        expand({"layers": ["bridge"], "workloads": ["rr"], "thresholds": {"rr.tps": 0.8}})
    s = expand({"layers": ["host", "bridge"], "workloads": ["rr"],
                "thresholds": {"rr": {"tps": 0.8}, "rr.rtt_p50_us": 1.5}}).points[0].scenario
    assert s.thresholds == {"rr.tps": 0.8, "rr.rtt_p50_us": 1.5}


SCENARIO = """\
name: gate
layers: [host, bridge]
nodes: 2
workloads:
  - rr: {duration: 200ms, port: 17311}
repeat: 2
thresholds: {rr.rtt_p50_us: LIMIT}
platform: {placement: off, idle_states: false, governor: false, quiet: null}
"""


@pytest.mark.parametrize(("limit", "code"), [("0.5", 1), ("50", 0)])
def test_run_fails_on_a_breach_and_records_it(limit: str, code: int, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """bridge and host are both loopback here (the fake backend): x~1, so a limit of x0.5
    breaks and x50 holds."""
    path = tmp_path / "gate.yaml"
    path.write_text(SCENARIO.replace("LIMIT", limit))
    out = tmp_path / "run"
    with fake_backend(monkeypatch, tmp_path / "state"):
        assert main(["run", str(path), "--out", str(out)]) == code
    printed = capsys.readouterr().out.splitlines()
    recorded = json.loads((out / "run.json").read_text())["thresholds"]
    assert recorded["passed"] is (code == 0) and recorded["limits"] == {"rr.rtt_p50_us": float(
        limit)}
    assert [line for line in printed if line.startswith(("FAIL", "thresholds "))] == [
        line for line in recorded["lines"] if line.startswith(("FAIL", "thresholds "))]
    fails = [line for line in printed if line.startswith("FAIL")]
    assert len(fails) == (1 if code else 0)
    if code:
        assert fails[0].startswith("FAIL rr.rtt_p50_us: bridge x")
    report = (out / "report.html").read_text()
    assert 'id="thresholds"' in report and recorded["lines"][-1] in report.replace("&#x27;", "'")
