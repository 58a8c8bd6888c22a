"""Scenario input that is bad, hostile or silently wrong: one clear line, before anything runs.

Loading (regular files only, size, UTF-8, YAML aliases/depth/keys, empty files), validation
(bounded durations, sizes, rates, counts and sweeps; no true/false for numbers; jitter within
delay; probe limits; cpusets, memory floor, node capacity with Hadoop's master), plans on a
kernel without a layer, and the Hadoop ``data_root`` recorded for ``clean``. No root needed.
"""

from __future__ import annotations

import json
import os
import threading
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from vnetbench.cli import clean as clean_mod
from vnetbench.cli.planning import dry_run_plans
from vnetbench.errors import ScenarioError, UnsupportedError
from vnetbench.host import state as state_mod
from vnetbench.host.state import RunState
from vnetbench.scenario.loading import MAX_FILE_BYTES, one_line
from vnetbench.scenario.model import (
    MAX_TRIALS,
    Scenario,
    bool_problem,
    cpu_ranges,
    parse_cpuset,
    usable_cpus,
)
from vnetbench.scenario.sweep import expand, load_scenario
from vnetbench.units import parse_duration, parse_rate, parse_size
from vnetbench.workloads.hadoop.cluster import HadoopCluster

ALIAS_BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
layers: [host]
"""


def load_error(tmp_path: Path, text: str | bytes, name: str = "s.yaml") -> str:
    """The one-line ScenarioError of loading ``text`` as a scenario file."""
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    return message


def expand_error(raw: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        expand(raw, "s.yaml")
    message = str(info.value)
    assert message.startswith("s.yaml: ") and "\n" not in message, message
    return message


# ---- loading ----------------------------------------------------------------------------

@pytest.mark.parametrize(("content", "expected"), [
    (b"\x7fELF\x02\x01\x01\x00\x00\x00", "binary file"),
    (b"name: caf\xe9\nlayers: [host]\n", "line 1 is not UTF-8 text (byte 0xe9"),
    (b"", "empty scenario: give at least layers or workloads"),
    (b"# nothing but a comment\n\n", "empty scenario"),
    (b"{}\n", "empty scenario"),
    (b"name: only-a-name\n", "neither layers nor workloads"),
    (b"layers: [host]\nname: \x07bell\n", "control character #x0007"),
    (b"layers: [host]\nnodes: !!int abc\n", "a value cannot be read"),
    (b"layers: [host]\n---\nlayers: [bridge]\n", "is not valid YAML"),
    (b"- host\n- bridge\n", "must hold a mapping"),
])
def test_file_content_refused(tmp_path: Path, content: bytes, expected: str) -> None:
    assert expected in load_error(tmp_path, content)


def test_fifo_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "s.yaml"
    os.mkfifo(fifo)
    errors: list[str] = []

    def load() -> None:
        try:
            load_scenario(fifo)
        except ScenarioError as exc:
            errors.append(str(exc))

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(5.0)
    if worker.is_alive():  # unblock the reader before failing
        with open(fifo, "w"):
            pass
        pytest.fail("loading a FIFO blocked")
    assert errors and "is a FIFO; a scenario must be a regular file" in errors[0]


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a device"), ("/", "a directory")])
def test_special_files_refused(path: str, kind: str) -> None:
    with pytest.raises(ScenarioError, match=f"is {kind}; a scenario must be a regular file"):
        load_scenario(path)


def test_oversized_file_refused(tmp_path: Path) -> None:
    text = "layers: [host]\n" + "#" * MAX_FILE_BYTES + "\n"
    assert "at most 1 MiB" in load_error(tmp_path, text)


def test_missing_file_names_the_reason(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read: No such file"):
        load_scenario(tmp_path / "absent.yaml")


def test_alias_bomb_refused_fast_and_small(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB)
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(ScenarioError, match="expands to more than 100000 values"):
            load_scenario(path)
        elapsed = time.monotonic() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < 0.5, elapsed
    assert peak < 20 * 2**20, peak


def test_aliases_within_bounds_still_work(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("x-rr: &rr {duration: 1s, request: 64}\n"
                    "layers: [host]\nworkloads: [{rr: *rr}, {crr: {duration: 1s}}]\n")
    with pytest.raises(ScenarioError, match="unknown key 'x-rr'"):
        load_scenario(path)  # anchors must live under a known key ...
    path.write_text("layers: [host]\nworkloads:\n  - rr: &rr {duration: 1s, request: 64}\n"
                    "  - crr: {<<: *rr, request: 100}\n")
    s = load_scenario(path).points[0].scenario  # ... and then they are shared as usual
    assert [list(w) for w in s.workloads] == [["rr"], ["crr"]]


@pytest.mark.parametrize(("text", "expected"), [
    ("layers: &a [host, *a]\n", "an alias refers to a list or mapping that contains it"),
    ("layers: [host]\nname: " + "[" * 200 + "]" * 200 + "\n", "nested deeper than 64 levels"),
    ("layers: [host]\nnodes: 2\nhosts: 1\nnodes: 4\n",
     "line 4: duplicate key 'nodes' (first given on line 2)"),
    ("layers: [host]\nlink: {delay: 1ms, delay: 2ms}\n", "duplicate key 'delay'"),
    ("layers: [host]\n1: x\n", "key '1' is read as int, not text; quote it"),
    ("layers: [host]\non: x\n", "key 'on' is read as bool"),
    ("layers: [host]\n? [a, b]\n: x\n", "a key must be a plain name"),
])
def test_yaml_structure_refused(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in load_error(tmp_path, text)


def test_deep_aliases_count_their_depth(tmp_path: Path) -> None:
    a = "[" * 40 + "x" + "]" * 40  # 41 levels; each alone is within the limit
    b = "[" * 25 + "*a" + "]" * 25  # 25 more around *a: 66 levels once the alias is used
    text = f"layers: [host]\nname: [&a {a}, &b {b}]\n"
    assert "nested deeper than 64 levels (aliases included)" in load_error(tmp_path, text)


# ---- values -----------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "expected"), [
    ({"workloads": [{"rr": {"duration": float("inf")}}]}, "rr: duration: a duration must be a finite number"),
    ({"workloads": [{"rr": {"duration": "2h", "warmup": 0}}]}, ""),
    ({"workloads": [{"rr": {"duration": "25h"}}]}, "a duration must be at most 1 day"),
    ({"link": {"delay": float("nan")}}, "link.delay: a duration must be a finite number"),
    ({"resources": {"memory": float("inf")}}, "resources.memory: a size must be a finite number"),
    ({"resources": {"memory": 10**400}}, "a size must be a finite number"),
    ({"resources": {"cpus": float("inf")}}, "resources.cpus"),
    ({"resources": {"cpus": 0.001}}, "resources.cpus"),
    ({"budget": "2d"}, "unknown duration unit 'd'"),
    ({"repeat": 1_000_000_000}, "repeat: Input should be less than or equal to 1000"),
    ({"max_repeat": 5000, "until_cv": "5%"}, "max_repeat"),
    ({"warmup": 10_000}, "warmup"),
    ({"seed": -1}, "seed"),
    ({"nodes": True}, "nodes: true is not a number"),
    ({"hosts": False}, "hosts: false is not a number"),
    ({"resources": {"cpus": True}}, "resources.cpus: true is not a number"),
    ({"platform": {"cpus": [True]}}, "platform.cpus.0: true is not a number"),
    ({"platform": {"quiet": {"threshold": True}}}, "platform.quiet.threshold: true"),
    ({"nodes": [2, True]}, "nodes: true is not a number"),
    ({"workloads": [{"rr": {"burst": True}}]}, "workloads: rr: burst: true is not a number"),
    ({"workloads": [{"hadoop": {"replication": True}}]}, "hadoop: replication: true"),
    ({"layers": [{"vxlan": {"vni": True}}]}, "layer_options: vxlan: vni: true is not a number"),
    ({"link": {"delay": "1ms", "jitter": "10ms"}}, "jitter (10 ms) is larger than delay (1 ms)"),
    ({"link": {"jitter": "1ms"}}, "jitter (1 ms) is larger than delay (0 ms)"),
    ({"link": {"rate": "100MBps"}}, "'100MBps' is ambiguous: tc reads it as bytes per second"),
    ({"link": {"rate": "100mbps"}}, "800mbit"),
    ({"link": {"rate": "2tbit"}}, "a rate must be at most 1 Tbit/s"),
    ({"workloads": [{"rr": {"request": "10G"}}]},
     "rr: request of 10737418240 bytes is more than the probe accepts over tcp (64 MiB)"),
    ({"workloads": [{"rr": {"protocol": "udp", "response": 70000}}]}, "65507 bytes"),
    ({"workloads": [{"crr": {"response": "65M"}}]}, "crr: response"),
    ({"workloads": [{"stream": {"protocol": "udp", "send_size": 9000, "duration": "1s"}}]}, ""),
    ({"workloads": [{"stream": {"protocol": "udp", "send_size": "64k"}}]}, "send_size of 65536 bytes"),
    ({"workloads": [{"stream": {"warmup": "2h"}}]}, "warmup"),
    ({"workloads": [{"rr": {"duration": "24h", "warmup": "1h"}}]}, "duration + warmup"),
    ({"workloads": [{"media": {"streams": 1000, "bitrate": "10gbit", "packet_size": 64}}]},
     "packets/s; the probe sends at most 2e6"),
    ({"workloads": [{"rr": {"interval": "1ms"}}]}, "interval"),
    ({"resources": {"cpuset": "99-200"}}, "resources.cpuset: CPUs 99-200 are not usable here"),
    ({"resources": {"cpuset": "0-x"}}, "is not a CPU list"),
    ({"resources": {"cpuset": "1-0"}}, "runs backwards"),
    ({"resources": {"memory": 1}}, "resources.memory: 1 B is below the 16 MiB minimum"),
    ({"resources": {"memory": "15M"}}, "below the 16 MiB minimum"),
    ({"nodes": 8000, "workloads": [{"hadoop": {}}]},
     "nodes: 8001 nodes (8000 + 1 the workloads add, Hadoop's master) on 1 host(s) is 8001 "
     "per host"),
    ({"nodes": 9000}, "the address plan holds 8000 per host"),
    ({"nodes": 1, "workloads": [{"rr": {}}]}, "the rr workload needs at least 2 nodes"),
    ({"workloads": [{"hadoop": {"data_root": "relative/dir"}}]}, "is not an absolute path"),
    ({"workloads": [{"hadoop": {"data_root": "/proc/x"}}]}, "is under /proc"),
    ({"layer_options": [1, 2]}, "layer_options"),
    ({"workloads": 5}, "workloads: give a list"),
])
def test_values_refused(raw: dict[str, Any], expected: str) -> None:
    raw = {"layers": ["host"], **raw}
    if not expected:
        assert expand(raw, "s.yaml").points
        return
    assert expected in expand_error(raw)


def test_silently_wrong_values_now_mean_what_they_say() -> None:
    s = expand({"layers": ["host"], "link": {"delay": "5ms", "jitter": "5ms", "rate": "1gibit"},
                "resources": {"memory": "16M", "cpuset": usable_cpus()[0]}}).points[0].scenario
    assert s.link.jitter == s.link.delay == pytest.approx(0.005)
    assert s.link.rate == 1024.0**3
    assert s.resources.memory == 16 * 2**20 and s.resources.cpuset == str(usable_cpus()[0])
    hadoop = expand({"layers": ["bridge"], "nodes": 249, "workloads": [{"hadoop": {}}]})
    assert hadoop.points[0].scenario.nodes == 249  # + master = 250 fits one host


def test_repeat_bomb_is_refused_without_listing_trials() -> None:
    t0 = time.monotonic()
    expand_error({"layers": ["host"], "repeat": 10**9})
    points = list(range(2, 102))
    message = expand_error({"layers": ["host", "bridge"], "nodes": points, "repeat": 1000})
    assert f"more than {MAX_TRIALS} trials" in message
    message = expand_error({"layers": ["host"], "nodes": list(range(1, 200)),
                            "hosts": list(range(1, 60))})
    assert "the sweep has 11741 points (199 nodes x 59 hosts); at most 10000" in message
    assert time.monotonic() - t0 < 5.0


def test_trial_count_matches_the_runner() -> None:
    from vnetbench.run.design import plan_trials

    sf = expand({"layers": ["host", "bridge", "nat"], "nodes": [2, 3], "repeat": 3,
                 "workloads": [{"rr": {}}]})
    expected = len(plan_trials(sf, lambda p: list(p.scenario.layers)))
    assert sum(p.scenario.trial_count() for p in sf.points) == expected == 2 * 3 * 4
    adaptive = expand({"layers": ["bridge"], "repeat": 2, "until_cv": "5%", "max_repeat": 7,
                       "warmup": 1}).points[0].scenario
    assert adaptive.trial_count() == 8


@pytest.mark.parametrize(("text", "bps"), [
    ("500mbit", 500e6), ("1gbit", 1e9), ("64kbit", 64e3), ("1tbit", 1e12), ("1kibit", 1024.0),
    ("2mibit", 2 * 1024.0**2), (1000, 1000.0), ("1000", 1000.0), ("100 Mbit", 100e6)])
def test_rates_in_bits(text: object, bps: float) -> None:
    assert parse_rate(text) == bps


@pytest.mark.parametrize("text", ["1bps", "100MBps", "100Mbps", "100mbps", "1GBps", "8kbps",
                                  "1kibps"])
def test_byte_rates_are_refused_with_both_readings(text: str) -> None:
    with pytest.raises(ValueError, match="ambiguous") as info:
        parse_rate(text)
    assert "bit" in str(info.value) and "bytes per second" in str(info.value)


@pytest.mark.parametrize(("parse", "bad"), [
    (parse_duration, float("inf")), (parse_duration, float("-inf")), (parse_duration, "1" * 400),
    (parse_duration, 86_401), (parse_duration, [1]), (parse_size, float("nan")),
    (parse_size, 2**51), (parse_size, True), (parse_rate, float("inf")), (parse_rate, False),
    (parse_rate, {"x": 1}),
])
def test_unit_parsers_refuse_unbounded(parse: Any, bad: object) -> None:
    with pytest.raises(ValueError):
        parse(bad)


def test_cpusets() -> None:
    usable = [0, 1, 2, 5]
    assert parse_cpuset("0-2,5", usable) == [0, 1, 2, 5]
    assert parse_cpuset(" 1 ", usable) == [1]
    with pytest.raises(ValueError, match=r"CPUs 3-4 are not usable here; .* use 0-2,5"):
        parse_cpuset("0,3-4", usable)
    with pytest.raises(ValueError, match="not usable"):
        parse_cpuset("0-999999", usable)  # refused without listing a million CPUs
    assert cpu_ranges([5, 0, 1, 2, 7]) == "0-2,5,7"


def test_bool_problem_follows_annotations() -> None:
    assert bool_problem({"nodes": True}, Scenario, "") == (
        "nodes: true is not a number (YAML reads true/false, yes/no, on/off as booleans); "
        "write the number")
    assert bool_problem({"busy": True, "skip_unsupported": False}, Scenario, "") is None
    assert bool_problem({"name": True}, Scenario, "") is None  # a str field: pydantic says so
    assert bool_problem({"workloads": [{"rr": {"x": True}}]}, Scenario, "") is None


def test_one_line_messages() -> None:
    assert one_line("a\nb\x1b[31m") == "a\\nb\\x1b[31m"
    assert len(one_line("x" * 5000)) == 600 and one_line("x" * 5000).endswith("...")


def test_hostile_keys_stay_on_one_short_line() -> None:
    message = expand_error({"layers": ["host"], "\x1b]0;owned\x07" + "k" * 3000: 1})
    assert "\x1b" not in message and len(message) <= 600


# ---- plan on a kernel without a layer -----------------------------------------------------

def _no_ipvlan(monkeypatch: pytest.MonkeyPatch) -> None:
    from vnetbench.layers.base import Layer

    def check(layer: Any) -> None:
        if layer.name == "ipvlan":
            raise UnsupportedError("layer 'ipvlan' needs the kernel feature 'ipvlan', which "
                                   "this host lacks")

    monkeypatch.setattr(Layer, "check_supported", check)


def test_plan_refuses_unsupported_layer_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_ipvlan(monkeypatch)
    sf = expand({"layers": ["bridge", "ipvlan"], "nodes": [2, 4]}, "s.yaml")
    with pytest.raises(ScenarioError, match=r"^s.yaml: layers: layer 'ipvlan' needs the kernel"):
        next(dry_run_plans(sf))


def test_plan_skips_unsupported_layer_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_ipvlan(monkeypatch)
    sf = expand({"layers": ["bridge", "ipvlan"], "skip_unsupported": True}, "s.yaml")
    plans = dict(dry_run_plans(sf))
    assert plans["ipvlan hosts=1 nodes=2"].startswith(
        "skipped on this host (skip_unsupported): layer 'ipvlan'")
    assert "== nodes" in plans["bridge hosts=1 nodes=2"]


def test_plan_shows_hadoop_master(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_ipvlan(monkeypatch)
    sf = expand({"layers": ["bridge"], "nodes": 2, "workloads": [{"hadoop": {}}]}, "s.yaml")
    (_, text), = dry_run_plans(sf)
    assert "    n2: host 0" in text  # 2 workers + the master


# ---- Hadoop data_root recorded for clean ---------------------------------------------------

def test_state_files_without_data_dirs_still_load(tmp_path: Path) -> None:
    path = tmp_path / "abcd.json"
    path.write_text(json.dumps({"short_id": "abcd", "net": "10.200", "owner_pid": 1,
                                "owner_start": None}))
    assert RunState.load(path).data_dirs == []


def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RunState:
    monkeypatch.setattr(state_mod, "STATE_DIR", tmp_path / "state")
    (tmp_path / "state").mkdir()
    return RunState("abcd", "10.200", 2**22, None)


def test_cluster_claims_only_what_it_makes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state(tmp_path, monkeypatch)
    fresh = SimpleNamespace(root=tmp_path / "data" / "abcd" / "hadoop",
                            lab=SimpleNamespace(claim_data_dir=state.add_data_dir))
    HadoopCluster.claim_root(cast(HadoopCluster, fresh))
    assert state.data_dirs == [str(tmp_path / "data" / "abcd")]
    assert RunState.load(state.path).data_dirs == state.data_dirs  # saved before mkdir
    existing = tmp_path / "other" / "abcd"
    existing.mkdir(parents=True)
    (existing / "theirs.txt").write_text("not ours")
    state.data_dirs.clear()
    HadoopCluster.claim_root(cast(HadoopCluster, SimpleNamespace(
        root=existing / "hadoop", lab=SimpleNamespace(claim_data_dir=state.add_data_dir))))
    assert state.data_dirs == [str(existing / "hadoop")]


def test_clean_removes_recorded_data_dirs_only(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state(tmp_path, monkeypatch)
    ours = tmp_path / "data" / "abcd"
    (ours / "hadoop" / "n0").mkdir(parents=True)
    (ours / "hadoop" / "n0" / "block").write_text("x")
    elsewhere = tmp_path / "keep"
    elsewhere.mkdir()
    link = tmp_path / "links" / "abcd"
    link.parent.mkdir()
    link.symlink_to(elsewhere)
    state.data_dirs = [str(ours), str(elsewhere), str(link), "relative/abcd", "/"]
    done = clean_mod._remove_data_dirs(state)
    assert done == [f"removed {ours} of run abcd"]
    assert not ours.exists() and elsewhere.is_dir() and link.is_symlink()
    assert (tmp_path / "data").is_dir()  # data_root itself stays


def test_hadoop_stop_removes_only_what_the_cluster_made(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``<data_root>/<run id>/hadoop`` that was there before the cluster is not its to
    remove; one it made is removed, with the run's directory when it made that too."""
    state = _state(tmp_path, monkeypatch)

    def cluster(root: Path) -> SimpleNamespace:
        return SimpleNamespace(root=root, daemons=[], guests=False, leftover_pids=lambda: [],
                               lab=SimpleNamespace(claim_data_dir=state.add_data_dir))

    theirs = tmp_path / "theirs" / "abcd" / "hadoop"
    theirs.mkdir(parents=True)
    (theirs / "keep.txt").write_text("not ours")
    before = cluster(theirs)
    HadoopCluster.claim_root(cast(HadoopCluster, before))
    HadoopCluster.stop(cast(HadoopCluster, before))
    assert (theirs / "keep.txt").read_text() == "not ours"
    fresh = cluster(tmp_path / "data" / "abcd" / "hadoop")
    HadoopCluster.claim_root(cast(HadoopCluster, fresh))
    fresh.root.mkdir(parents=True)
    (fresh.root / "block").write_text("hdfs")
    HadoopCluster.stop(cast(HadoopCluster, fresh))
    assert not (tmp_path / "data" / "abcd").exists()
