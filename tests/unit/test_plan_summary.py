"""``vnetbench plan``'s summary: labs, trials or interleaved sessions and the estimated time,
counted by the runner's own rules (``rounds_for``, ``plan_blocks``, ``split_workloads``,
``Scenario.trial_count``), skipped layers with why; the commands only with ``--commands``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.fake_backend import fake_backend
from vnetbench.cli.main import main
from vnetbench.cli.plan_summary import LAB_S, PASS_S, RUN_S, duration_text, summarize
from vnetbench.run.design import plan_blocks
from vnetbench.run.interleave import rounds_for
from vnetbench.run.sessions import path_names
from vnetbench.scenario.overrides import load_scenario_with, option_overrides
from vnetbench.scenario.sweep import expand, load_scenario
from vnetbench.workloads.paired import session_seconds

PAIRED = {"name": "p", "hosts": [1, 2], "nodes": 2,
          "layers": ["host", "bridge", "vxlan", "wireguard"],
          "workloads": [{"rr": {"duration": "600ms"}}, {"crr": {"duration": "400ms"}},
                        {"stream": {"duration": "500ms"}}], "repeat": 4}


def test_an_interleaved_session_is_counted_as_the_runner_runs_it() -> None:
    sf = expand(PAIRED)
    summary = summarize(sf, {})
    expected = RUN_S
    for point, got in zip(sf.points, summary.points, strict=True):
        layers = list(point.scenario.layers)
        paths = len(path_names(point, layers))
        assert got.labs == paths == 5 and got.sessions == 3 and got.trials == 0
        expected += paths * LAB_S
        for kind, options in point.scenario.workload_options():
            slice_s = {"rr": 0.1, "crr": 0.1, "stream": 0.25}[kind]
            rounds = rounds_for(options, 4, slice_s)
            assert f"{kind} {rounds} rounds of {slice_s * 1000:g} ms" in got.lines[0]
            expected += session_seconds(rounds, 1, paths, slice_s) + PASS_S
    assert summary.seconds == pytest.approx(expected)
    assert summary.most_seconds == pytest.approx(expected)  # no until_cv: no adaptive rounds
    assert [p.where for p in summary.points] == ["hosts=1 nodes=2", "hosts=2 nodes=2"]
    # the rounds follow the slice: twice the slice, half the rounds
    halved = summarize(expand({**PAIRED, "pairing": {"slice": "200ms"}}), {})
    assert "rr 12 rounds of 200 ms" in halved.points[0].lines[0]


def test_adaptive_rounds_are_a_bound_cut_by_the_budget() -> None:
    adaptive = summarize(expand({**PAIRED, "until_cv": "2%", "max_repeat": 8}), {})
    assert adaptive.most_seconds > adaptive.seconds
    assert "rr 24 rounds of 100 ms in 10 ms pieces (up to 48)" in adaptive.points[0].lines[0]
    assert adaptive.most_seconds > 100
    budget = summarize(expand({**PAIRED, "until_cv": "2%", "max_repeat": 8,
                               "budget": "100s"}), {})
    assert budget.most_seconds == pytest.approx(100.0)
    assert "(at most 1 min 40 s with adaptive rounds, the 100 s budget)" in budget.text()
    # a budget shorter than the fixed rounds cuts nothing: they always run
    short = summarize(expand({**PAIRED, "until_cv": "2%", "max_repeat": 8, "budget": "10s"}),
                      {})
    assert short.most_seconds == pytest.approx(short.seconds) and "at most" not in short.text()


def test_a_skipped_layer_says_why_and_is_not_counted() -> None:
    sf = expand({**PAIRED, "skip_unsupported": True})
    summary = summarize(sf, {"wireguard": "needs the kernel feature 'wg'"})
    assert "  skipped: wireguard: needs the kernel feature 'wg'" in summary.text().splitlines()
    assert all(p.labs == 4 and "wireguard" not in p.layers for p in summary.points)


def test_blocks_count_the_runners_blocks() -> None:
    sf = expand({**PAIRED, "busy": True, "warmup": 1})
    summary = summarize(sf, {})
    point = sf.points[0]
    per_round = len(plan_blocks(point, list(point.scenario.layers), 0, 0, (0, 1, 2)))
    assert per_round == 8  # 3 layers beside the baseline + the A/A block, two trials each
    assert summary.points[0].trials == per_round * (4 + 1)
    assert summary.points[0].design == "paired: blocks"
    assert any("busy neighbours" in line for line in summary.points[0].lines)


def test_cpu_limits_put_the_workloads_in_rounds_over_live_labs() -> None:
    sf = expand({**PAIRED, "resources": {"cpus": 1}})
    point = summarize(sf, {}).points[0]
    assert point.design == "paired: rounds" and point.trials == 0
    assert point.labs == 5  # 4 layers and the second baseline lab, built once
    assert any("per-node CPU limits" in line for line in point.lines)


def test_pairing_off_counts_the_scenarios_trials(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(json.dumps({**PAIRED, "until_cv": "5%", "max_repeat": 6}))
    sf = load_scenario_with(path, option_overrides(sets=["pairing=off"]))
    summary = summarize(sf, {})
    for point, got in zip(sf.points, summary.points, strict=True):
        assert got.trials == 4 * 5  # 4 rounds of 4 layers and the A/A baseline
        assert got.most_trials == point.scenario.trial_count() == 6 * 5
        assert got.design == "unpaired (pairing: off)"
    assert summary.quiet_wait == pytest.approx(2 * 30 * 3.0)
    assert "with --set pairing=off" in summary.text().splitlines()[0]


def test_the_count_agrees_with_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build-only sweep through the fake backend: one lab per trial, as many as planned."""
    path = tmp_path / "b.yaml"
    path.write_text("name: b\nlayers: [host, bridge]\nnodes: [2, 3]\nrepeat: 2\nwarmup: 1\n")
    summary = summarize(load_scenario(path), {})
    with fake_backend(monkeypatch, tmp_path / "state") as log:
        assert main(["run", str(path), "--out", str(tmp_path / "run")]) == 0
    assert sum(p.trials for p in summary.points) == len(log.realised) == 12
    assert all(p.design == "build only (no workloads)" for p in summary.points)


def test_the_cli_prints_the_summary_and_the_commands_only_when_asked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(json.dumps(PAIRED))
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "### " not in out and "estimated time: about " in out and "--commands" in out
    assert len(out.splitlines()) < 10
    assert main(["plan", str(path), "--commands"]) == 0
    full = capsys.readouterr().out
    assert full.startswith(out.rsplit("\n", 2)[0]) and full.count("### ") == 8
    assert main(["plan", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["plans"] == [] and data["summary"]["labs"] == 10
    assert data["summary"]["seconds"] == pytest.approx(summarize(expand(PAIRED), {}).seconds,
                                                       abs=0.1)


@pytest.mark.parametrize(("seconds", "text"), [(4.2, "5 s"), (60, "1 min"), (95, "1 min 35 s"),
                                               (3700, "1 h 2 min")])
def test_duration_text(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


def _shipped() -> list[Path]:
    from vnetbench.studies.model import all_studies

    root = Path(__file__).resolve().parents[2]
    studies = {s.id: s for s in all_studies().values()}.values()
    packs = [p for study in studies for p in sorted(study.folder.glob("*.yaml"))
             if p.name != "study.yaml"]
    return sorted(root.glob("scenarios/*.yaml")) + packs


@pytest.mark.parametrize("path", _shipped(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_plan_and_runner_estimate_one_measuring_time_for_every_shipped_scenario(
        path: Path) -> None:
    """The runner's estimate (its budget and its "about N s of measurement" line) and
    ``vnetbench plan``'s are one function (``PointDesign.expected_seconds``): plan adds only
    the set-up it says it adds."""
    from vnetbench.run.design import paired_designs

    sf = load_scenario(path)
    summary = summarize(sf, {})
    if not (sf.points[0].scenario.pairing.on and any(p.scenario.workloads for p in sf.points)):
        return
    designs = paired_designs(sf, lambda p: list(p.scenario.layers))
    for design, point in zip(designs, summary.points, strict=True):
        if point.design.startswith("paired"):
            assert point.measuring == pytest.approx(design.expected_seconds())
            assert point.seconds >= point.measuring


def test_rr_over_every_circuit_is_counted_once_per_circuit() -> None:
    """rr with ``circuits`` measures each pair of emulated hosts one after another: 4 hosts,
    6 circuits, so a run lasts six durations (the plan said one: 9 min for study 004's
    quick pack, which took 23)."""
    from vnetbench.run.design import paired_designs, run_seconds
    from vnetbench.workloads.probe.workload import RrOptions

    assert run_seconds(RrOptions.model_validate({"duration": "2s", "circuits": True}), 4) == 12.0
    assert run_seconds(RrOptions.model_validate({"duration": "2s"}), 4) == 2.0
    sf = expand({"name": "c", "hosts": 4, "nodes": 4, "layers": ["host", "docker-overlay"],
                 "workloads": [{"rr": {"duration": "2s", "circuits": True}}], "repeat": 3})
    (design,) = paired_designs(sf, lambda p: list(p.scenario.layers))
    assert design.expected_seconds() == pytest.approx(3 * design.paths * 12.0)
