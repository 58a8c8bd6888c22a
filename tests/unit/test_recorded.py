"""A recorded run read back typed and by its own legend (``results.recorded``): the scenario
as a ``RecordedScenario`` whatever shape an older run gave it, and the labels' unit kinds and
the layers' twins and crossings as the run recorded them, not as today's code has them."""

from __future__ import annotations

from pathlib import Path

import pytest

import vnetbench
from vnetbench.explain.facts import crossing_parts
from vnetbench.report.twins import twin_of, twin_pairs
from vnetbench.results.model import Sample
from vnetbench.results.recorded import LEGEND_KEY, Legend, RecordedScenario
from vnetbench.results.store import RunWriter, load_run


def test_a_recorded_scenario_reads_every_shape_a_run_gave_it() -> None:
    s = RecordedScenario.from_dict({
        "name": "x", "file": "x.yaml", "layers": ["host", {"vxlan": {"vni": 7}}, "bridge"],
        "workloads": [{"rr": {"duration": "2s"}}, {"kind": "stream", "nodelay": True},
                      {"a": {}, "b": {}}, "crr"],
        "repeat": 3, "until_cv": "5%", "warmup": 1, "pairing": {"builds": 2},
        "resources": {"cpuset": "0-1"}, "busy": True, "thresholds": {"rr.tps": 0.8}})
    assert (s.name, s.file, s.layers) == ("x", "x.yaml", ("host", "bridge"))
    assert [k for k, _ in s.workloads] == ["rr", "stream"]  # the others are not entries
    assert s.workloads[1][1]["nodelay"] is True
    assert dict(s.shown) == {"repeat": "3", "until_cv": "5%"}
    assert (s.warmup, s.builds, s.cpuset, s.busy) == (1, 2, "0-1", True)
    assert s.thresholds == {"rr.tps": 0.8} and s.without_file()["name"] == "x"
    # a field of the wrong kind reads as absent, never as a crash
    odd = RecordedScenario.from_dict({"layers": "host", "workloads": {"rr": {}},
                                      "warmup": "soon", "pairing": {"builds": True},
                                      "resources": {"cpuset": ["0", "1"]}, "thresholds": [1]})
    assert (odd.layers, odd.workloads, odd.warmup, odd.builds, odd.cpuset, odd.thresholds) == \
        ((), (), 0, 1, None, {})


def _run(path: Path, environment: dict[str, object]) -> Path:
    writer = RunWriter.create(path, {"name": "legend", "layers": ["host", "docker-bridge",
                                                                 "bridge"]}, environment)
    writer.append_samples([Sample("tps", 1.0, "1/s", {"layer": "host", "link.delay": "10ms"})])
    writer.close()
    return path


def test_a_run_is_read_by_its_own_legend_not_by_todays_catalogue(tmp_path: Path) -> None:
    # as the code of its day had them: docker-bridge's twin bridge, bridge crossing hosts
    legend = Legend(True, {"link.delay": "size"}, {"docker-bridge": "bridge"},
                    {"bridge": "the bridge's trunk"})
    then = load_run(_run(tmp_path / "then", {LEGEND_KEY: legend.to_dict()}))
    assert then.meta.legend == legend
    env = then.meta.environment
    assert twin_of("docker-bridge", env) == "bridge" and twin_of("docker-nat", env) is None
    assert twin_pairs(["host", "docker-bridge", "bridge"], env) == [("docker-bridge", "bridge")]
    assert crossing_parts(env) == {"bridge": "the bridge's trunk"}
    # the label's unit kind is the run's: 10ms read as a size, not as today's duration
    frame = vnetbench.load(then.path)
    assert frame["link.delay"].tolist() == ["10ms"]
    # a run recorded before legends is read with today's definitions
    old = load_run(_run(tmp_path / "old", {}))
    assert not old.meta.legend.recorded
    assert twin_of("docker-nat", old.meta.environment) == "nat"
    assert "wireguard" in crossing_parts(old.meta.environment)
    assert vnetbench.load(old.path)["link.delay"].tolist() == pytest.approx([0.01])
