"""Scenario loading, sweeps and one-line errors (no kernel)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetbench.errors import ScenarioError
from vnetbench.scenario.sweep import expand, load_scenario

ISSUE_EXAMPLE = """
name: quick
hosts: 2
nodes: 4
layers: [host, bridge, nat, macvlan, routed, vxlan, wireguard, userspace]
resources: {cpus: 0.5, memory: 512M}
link: {delay: 10ms, jitter: 1ms, loss: 0.5%, rate: 500mbit}
repeat: 3
"""


def test_issue_example_loads_exactly(tmp_path: Path) -> None:
    path = tmp_path / "quick.yaml"
    path.write_text(ISSUE_EXAMPLE)
    sf = load_scenario(path)
    (point,) = sf.points
    s = point.scenario
    assert (s.name, s.hosts, s.nodes, s.repeat) == ("quick", 2, 4, 3)
    assert s.resources.cpus == 0.5 and s.resources.memory == 512 * 2**20
    assert s.link.delay == pytest.approx(0.010) and s.link.jitter == pytest.approx(0.001)
    assert s.link.loss == pytest.approx(0.005) and s.link.rate == 500e6
    assert len(s.layers) == 8


def test_scalar_lists_sweep_as_a_product() -> None:
    sf = expand({"nodes": [2, 4, 8], "link": {"delay": ["0ms", "10ms"]}, "layers": ["bridge"]})
    assert len(sf.points) == 6
    assert {(p.axes["nodes"], p.axes["link.delay"]) for p in sf.points} == {
        (n, d) for n in ("2", "4", "8") for d in ("0ms", "10ms")}
    assert {p.scenario.nodes for p in sf.points} == {2, 4, 8}


def test_layers_list_is_not_a_sweep() -> None:
    sf = expand({"layers": ["host", "bridge"]})
    assert len(sf.points) == 1 and sf.points[0].scenario.layers == ("host", "bridge")


def test_inline_layer_options() -> None:
    sf = expand({"layers": ["host", {"vxlan": {"vni": 7}}]})
    s = sf.points[0].scenario
    assert s.layers == ("host", "vxlan") and s.layer_options["vxlan"] == {"vni": 7}


@pytest.mark.parametrize(("raw", "expected"), [
    ({"layerz": ["bridge"]}, "unknown key 'layerz' (did you mean layers?); allowed here: name"),
    ({"link": {"dealy": "1ms"}},
     "unknown key 'link.dealy' (did you mean delay?); allowed here: delay, jitter"),
    ({"link": {"delay": "10 parsecs"}}, "link.delay: unknown duration unit 'parsecs'"),
    ({"link": {"loss": "150%"}}, "outside 0%..100%"),
    ({"resources": {"memory": "12 bananas"}}, "resources.memory"),
    ({"layers": ["teleport"]}, "unknown layer 'teleport'; allowed: host, bridge"),
    ({"nodes": 8001}, "holds 8000 per host"),
    ({"hosts": 8, "nodes": 8001}, "holds 1000 per host with 8 host(s)"),
    ({"hosts": 0}, "hosts"),
    ({"layers": [{"vxlan": {"vnid": 3}}]}, "unknown key 'vnid'"),
    ({"nodes": []}, "an empty list sweeps nothing"),
])
def test_errors_name_file_key_and_allowed(raw: dict, expected: str) -> None:
    with pytest.raises(ScenarioError) as info:
        expand(raw, "s.yaml")
    message = str(info.value)
    assert message.startswith("s.yaml: ") and expected in message and "\n" not in message


@pytest.mark.parametrize(("raw", "expected"), [
    ({"layers": ["host", "brige"]}, "unknown layer 'brige' (did you mean bridge?); allowed:"),
    ({"layers": ["host"], "workloads": ["strem"]},
     "unknown workload 'strem' (did you mean stream?); allowed:"),
    ({"workloads": [{"rr": {"duraton": "1s"}}]},
     "rr: unknown key 'duraton' (did you mean duration?); allowed here:"),
    ({"layers": [{"vxlan": {"vnii": 3}}]}, "unknown key 'vnii' (did you mean vni?)"),
    ({"layer_options": {"vxlam": {}}}, "unknown layer 'vxlam' (did you mean vxlan?)"),
    ({"platform": {"quiet": {"treshold": 1}}},
     "unknown key 'platform.quiet.treshold' (did you mean threshold?)"),
    ({"platform": {"placement": "crss"}},
     "platform.placement: Input should be 'cross', 'same' or 'off' (did you mean cross?)"),
    ({"pairing": {"mode": "onn"}}, "(did you mean on?)"),
])
def test_a_near_miss_says_did_you_mean(raw: dict, expected: str) -> None:
    with pytest.raises(ScenarioError) as info:
        expand(raw, "s.yaml")
    assert expected in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("raw", [{"layers": ["teleport"]}, {"zzzz": 1},
                                 {"workloads": ["qqqqq"]}])
def test_nothing_close_suggests_nothing(raw: dict) -> None:
    with pytest.raises(ScenarioError) as info:
        expand(raw, "s.yaml")
    assert "did you mean" not in str(info.value)


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nlayers: [bridge\n")
    with pytest.raises(ScenarioError, match=r"bad.yaml: line \d+ is not valid YAML"):
        load_scenario(path)


def test_digest_changes_with_content() -> None:
    a = expand({"nodes": 2}).points[0].scenario.digest()
    b = expand({"nodes": 3}).points[0].scenario.digest()
    assert a != b and len(a) == 64


def test_shipped_scenarios_load() -> None:
    root = Path(__file__).resolve().parents[2]
    files = list((root / "scenarios").glob("*.yaml"))
    files.append(root / "src" / "vnetbench" / "data" / "default.yaml")
    for path in files:
        assert load_scenario(path).points, path


def test_a_bare_yaml_off_is_placement_off(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("layers: [host]\nplatform: {placement: [cross, off], idle_states: off}\n")
    sf = load_scenario(path)
    assert [p.scenario.platform.placement for p in sf.points] == ["cross", "off"]
    assert [p.axes["platform.placement"] for p in sf.points] == ["cross", "off"]
    assert not sf.points[0].scenario.platform.idle_states
