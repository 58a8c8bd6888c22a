"""Command-line overrides (``--layers/--nodes/--hosts/--repeat/--set``): applied to the
scenario's data before validation, every mistake one line naming the option, and what was
overridden recorded in run.json (through the fake backend, no root)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.fake_backend import fake_backend
from vnetbench.cli.main import main
from vnetbench.errors import ScenarioError
from vnetbench.scenario.overrides import load_scenario_with, option_overrides, parse_set
from vnetbench.scenario.sweep import load_scenario

SCENARIO = """\
name: over
hosts: 1
nodes: 2
layers: [host, {vxlan: {vni: 7}}, bridge]
link: {delay: 1ms}
workloads:
  - rr: {duration: 1s}
  - crr
  - rr: {duration: 2s, request: 10}
repeat: 3
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "over.yaml"
    path.write_text(SCENARIO)
    return path


def test_named_options_replace_the_files_values(scenario: Path) -> None:
    sf = load_scenario_with(scenario, option_overrides(layers="host,vxlan", nodes="2,4", hosts="2",
                                                  repeat="5"))
    assert [p.scenario.nodes for p in sf.points] == [2, 4]
    s = sf.points[0].scenario
    assert s.layers == ("host", "vxlan") and s.hosts == 2 and s.repeat == 5
    assert s.layer_options["vxlan"] == {"vni": 7}  # kept from the file's inline options
    assert sf.overrides == ("--layers host,vxlan", "--nodes 2,4", "--hosts 2", "--repeat 5")
    assert sf.raw["nodes"] == [2, 4] and load_scenario(scenario).raw["nodes"] == 2


def test_set_reaches_scenario_workload_and_layer_keys(scenario: Path) -> None:
    sets = ["link.delay=10ms", "pairing=off", "rr.duration=500ms", "vxlan.vni=9",
            "bridge.bridge_nf=true", "platform.quiet.wait=1s", "link.jitter=[0ms, 1ms]"]
    sf = load_scenario_with(scenario, option_overrides(sets=sets))
    s = sf.points[0].scenario
    assert s.link.delay == pytest.approx(0.01) and not s.pairing.on
    assert [o.duration for k, o in s.workload_options() if k == "rr"] == [0.5, 0.5]
    assert s.layer_options["vxlan"]["vni"] == 9 and s.layer_options["bridge"]["bridge_nf"]
    assert s.platform.quiet is not None and s.platform.quiet.wait == 1.0
    assert [p.axes for p in sf.points] == [{"link.jitter": "0ms"}, {"link.jitter": "1ms"}]
    assert sf.overrides == tuple(f"--set {x}" for x in sets)
    assert sf.digest() != load_scenario(scenario).digest()


@pytest.mark.parametrize(("options", "says"), [
    ({"sets": ["link.dely=1ms"]},
     "--set link.dely=1ms: unknown key 'link.dely' (did you mean delay?); allowed in link: "),
    ({"sets": ["rr.duraton=1s"]},
     "--set rr.duraton=1s: the rr workload has no option 'duraton' (did you mean duration?)"),
    ({"sets": ["strem.duration=1s"]}, "unknown key 'strem' (did you mean stream?)"),
    ({"sets": ["stream.streams=2"]}, "the scenario runs no stream workload (it runs rr, crr, rr)"),
    ({"sets": ["nat.x=1"]}, "layer nat has no option 'x'"),
    ({"sets": ["wireguard.port=1"]}, "--set wireguard.port=1: the scenario has no wireguard "
                                     "layer (it has host, vxlan, bridge)"),
    ({"sets": ["nodes.x=1"]}, "nodes is a single value, not a mapping with 'x'"),
    ({"sets": ["link"]}, "--set link: give KEY=VALUE"),
    ({"sets": ["link.delay="]}, "give a value after '='"),
    ({"sets": ["workloads.5.rr.duration=1s"]}, "the scenario's list has 3 item(s)"),
    ({"sets": ["workloads.1.crr.duration=1s"]},
     "--set workloads.1.crr.duration=1s: workloads.1 is 'crr' in the scenario, not a mapping"),
    ({"sets": ["link.delay=[1ms"]}, "--set link.delay=[1ms: line 1 is not valid YAML"),
    ({"nodes": "x"}, "over.yaml with --nodes x: nodes: Input should be a valid integer"),
    ({"nodes": "2,,4"}, "--nodes 2,,4: an empty item"),
    ({"layers": "host,brige"},
     "over.yaml with --layers host,brige: layers: unknown layer 'brige' (did you mean bridge?)"),
    ({"repeat": "0"}, "over.yaml with --repeat 0: repeat: Input should be greater than"),
    ({"sets": ["link.delay=5 parsecs"]},
     "over.yaml with --set link.delay=5 parsecs: link.delay: unknown duration unit"),
])
def test_a_bad_override_is_one_line_naming_the_option(scenario: Path, options: dict,
                                                      says: str) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario_with(scenario, option_overrides(**options))
    assert says in str(info.value) and "\n" not in str(info.value)


def test_the_cli_takes_them_on_run_and_plan(scenario: Path, capsys: pytest.CaptureFixture[str]
                                            ) -> None:
    assert main(["plan", str(scenario), "--commands", "--json", "--layers", "host",
                 "--set", "link.delay=[0ms,5ms]", "--hosts", "2"]) == 0
    plans = json.loads(capsys.readouterr().out)["plans"]
    assert {(p["layer"], p["hosts"], p["axes"]["link.delay"]) for p in plans} == {
        ("host", 2, "0ms"), ("host", 2, "5ms")}
    assert main(["run", str(scenario), "--set", "rr.duraton=1s"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("vnetbench: error: --set rr.duraton=1s")


def test_run_json_records_what_was_overridden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "build.yaml"
    path.write_text("name: build\nlayers: [host, bridge]\nnodes: 2\n")
    out = tmp_path / "run"
    with fake_backend(monkeypatch, tmp_path / "state") as log:
        assert main(["run", str(path), "--out", str(out), "--layers", "bridge",
                     "--nodes", "3", "--set", "name=renamed"]) == 0
    assert [(layer, nodes) for layer, nodes, _ in log.realised] == [("bridge", 3)]
    scenario = json.loads((out / "run.json").read_text())["scenario"]
    assert scenario["overrides"] == ["--layers bridge", "--nodes 3", "--set name=renamed"]
    assert scenario["file"] == str(path)
    assert (scenario["layers"], scenario["nodes"], scenario["name"]) == (["bridge"], 3, "renamed")


def test_a_run_without_overrides_records_none(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("layers: [host]\n")
    assert "overrides" not in load_scenario(path).record()


def test_parse_set_reads_yaml() -> None:
    assert parse_set("pairing=off").value is False
    assert parse_set("link.delay=[0ms, 10ms]").value == ["0ms", "10ms"]
    assert parse_set("description=a=b").value == "a=b"


def test_up_takes_set_without_a_scenario() -> None:
    from vnetbench.cli.up import select_lab

    spec = select_lab(None, "vxlan", None, 2, ["link.delay=10ms", "vxlan.vni=9"])
    assert (spec.layer, spec.hosts, spec.nodes) == ("vxlan", 2, 2)
    assert spec.link.delay == pytest.approx(0.01) and spec.layer_options == {"vni": 9}
    with pytest.raises(ScenarioError, match=r"--set vxlan\.vnii=9: layer vxlan has no option"):
        select_lab(None, "vxlan", None, 2, ["vxlan.vnii=9"])
