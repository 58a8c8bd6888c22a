"""Platform control on real namespaces: node processes and the hosts' daemons land on the CPUs
the placement rule gives them; a tiny run holds idle states off while it runs, records every
control in run.json, measures its baseline as A/A groups, and releases the hold when done.

Each test is short (a lab or a 0.3 s workload): the machine may be shared with a measurement.
Only ``/dev/cpu_dma_latency`` is *read* here (opening it for reading adds no request).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from vnetbench.backends.lab import Lab, open_lab
from vnetbench.host.features import kernel_features
from vnetbench.lab.placement import PlacementMode, usable_cpus
from vnetbench.lab.spec import LabSpec
from vnetbench.run import trial as trial_mod
from vnetbench.run.runner import run_scenario
from vnetbench.scenario.sweep import expand

from ..conftest import lab_leftovers

pytestmark = pytest.mark.root

DMA_LATENCY = Path("/dev/cpu_dma_latency")


def _objects_of(run_id: str) -> list[str]:
    return [x for x in lab_leftovers() if f"vnb{run_id}" in x]


def _cpu_list(text: str) -> set[int]:
    """``0-2,5`` -> {0, 1, 2, 5}."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def _allowed(pid: int) -> list[set[int]]:
    """Cpus_allowed_list of every thread of ``pid``."""
    out = []
    for task in sorted(Path(f"/proc/{pid}/task").iterdir()):
        for line in (task / "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                out.append(_cpu_list(line.split(":", 1)[1]))
    return out


def _sleep_in(lab: Lab, index: int) -> set[int]:
    """Affinity of a process spawned in node ``index`` (then stopped by its PID)."""
    proc = lab.nodes[index].spawn(["sleep", "30"])
    try:
        got = os.sched_getaffinity(proc.pid)
        assert _allowed(proc.pid) == [got]
        return got
    finally:
        lab.stop(proc)


def _run_in(lab: Lab, index: int) -> set[int]:
    """Affinity of a command run (and waited for) in node ``index``."""
    out = lab.nodes[index].run(["grep", "Cpus_allowed_list", "/proc/self/status"], timeout=10)
    return _cpu_list(out.stdout.split(":", 1)[1])


@pytest.mark.parametrize("mode", ["cross", "same", "off"])
def test_node_processes_are_pinned_as_placed(mode: PlacementMode) -> None:
    with open_lab(LabSpec("bridge", hosts=2, nodes=2, placement=mode)) as lab:
        run_id = lab.run_id
        cpus = lab.placement.cpus
        assert cpus == usable_cpus()
        if mode == "off":
            everything = set(os.sched_getaffinity(0))
            assert [n.cpus for n in lab.nodes] == [None, None]
            assert _sleep_in(lab, 0) == everything and _sleep_in(lab, 1) == everything
            assert _run_in(lab, 1) == everything
        else:
            want = ({cpus[0]}, {cpus[1 % len(cpus)]} if mode == "cross" else {cpus[0]})
            assert [n.cpus for n in lab.nodes] == [tuple(want[0]), tuple(want[1])]
            assert _sleep_in(lab, 0) == want[0]
            assert _sleep_in(lab, 1) == want[1]
            assert _run_in(lab, 0) == want[0] and _run_in(lab, 1) == want[1]
        assert lab.placement_misses == []
    assert _objects_of(run_id) == []


def test_explicit_cpu_list_is_used() -> None:
    last = usable_cpus()[-1]
    with open_lab(LabSpec("bridge", hosts=1, nodes=2, placement="cross", cpus=[last])) as lab:
        run_id = lab.run_id
        assert lab.placement.cpus == (last,)
        assert _sleep_in(lab, 0) == {last} and _sleep_in(lab, 1) == {last}
        assert lab.placement_misses == []
    assert _objects_of(run_id) == []


DAEMON_LAYERS = {"userspace": "tunnel", "wireguard": "wireguard-go"}


@pytest.mark.parametrize("layer", sorted(DAEMON_LAYERS))
def test_host_daemons_are_pinned_to_their_hosts_cpu(layer: str) -> None:
    features = kernel_features()
    if layer == "userspace" and not features.get("tun"):
        pytest.skip("no tun device support")
    if layer == "wireguard" and features.get("wireguard"):
        pytest.skip("kernel WireGuard: no userspace daemon to place")
    with open_lab(LabSpec(layer, hosts=2, nodes=2, placement="cross")) as lab:
        run_id = lab.run_id
        for h in range(2):
            dev = lab.names.tun(h) if layer == "userspace" else lab.names.wireguard(h)
            proc = lab.daemon_process(f"{DAEMON_LAYERS[layer]} {dev}")
            assert proc is not None and proc.poll() is None
            first = next(n for n in lab.nodes if n.host == h)
            assert first.cpus is not None
            want = set(first.cpus)
            assert lab.placement.for_host(h) == first.cpus
            threads = _allowed(proc.pid)
            assert threads and all(t == want for t in threads), (h, threads)
        # the two hosts' daemons are apart, as the two hosts' nodes are
        assert lab.placement.for_host(0) != lab.placement.for_host(1) or len(usable_cpus()) == 1
        assert lab.placement_misses == []
    assert _objects_of(run_id) == []


def _dma_latency() -> int:
    """The current CPU latency request (opened read-only: no request of our own)."""
    fd = os.open(DMA_LATENCY, os.O_RDONLY)
    try:
        data = os.read(fd, 4)
    finally:
        os.close(fd)
    assert len(data) == 4
    return int(struct.unpack("i", data)[0])


TINY = {
    "name": "platform-tiny",
    "hosts": 1,
    "nodes": 2,
    "layers": ["host", "bridge"],
    "workloads": [{"rr": {"protocol": "tcp", "duration": "0.3s"}}],
    "repeat": 1,
    "seed": 11,
    "platform": {"quiet": {"threshold": 64, "wait": "0.5s"}},
    "pairing": "off",  # a lab per trial (the paired session: test_paired_run)
}


def test_tiny_run_records_controls_and_releases_idle_states(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not DMA_LATENCY.exists():
        pytest.skip("no /dev/cpu_dma_latency")
    before = _dma_latency()
    during: list[tuple[str, int]] = []
    real_run_workload = trial_mod._run_workload

    def run_workload(*args: Any, **kwargs: Any) -> Any:
        during.append(("[workload]", _dma_latency()))  # held while the workload runs
        return real_run_workload(*args, **kwargs)

    monkeypatch.setattr(trial_mod, "_run_workload", run_workload)

    def progress(message: str) -> None:
        during.append((message, _dma_latency()))

    sf = expand(json.loads(json.dumps(TINY)), str(tmp_path / "tiny.yaml"))
    out = tmp_path / "run"
    try:
        run_scenario(sf, out, progress=progress)
    finally:
        after = _dma_latency()
        run_ids = [json.loads(p.read_text())["run_id"]
                   for p in sorted((out / "raw").glob("trial-*/lab.json"))]
    assert after == before, f"idle-state request not released: {before} before, {after} after"
    held = [value for message, value in during if message == "[workload]"]
    assert len(held) == 3 and all(value == 0 for value in held), during  # held meanwhile
    between = [value for message, value in during if message.startswith("[") and "/" in message]
    assert len(between) == 3 and all(value == before for value in between), during  # free

    meta = json.loads((out / "run.json").read_text())
    controls = meta["environment"]["controls"]
    assert controls["idle_states"]["requested"] and controls["idle_states"]["effective"]
    assert controls["placement"]["requested"] and controls["placement"]["effective"]
    assert controls["placement"]["mode"] == "cross"
    assert "governor" in controls and "requested" in controls["governor"]
    assert controls["quiet"]["requested"] and len(controls["quiet"]["trials"]) == 3

    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    p50 = [s for s in samples if s["metric"] == "rtt_p50_us"]
    assert sorted((s["labels"]["layer"], s["labels"].get("aa", "")) for s in p50) == [
        ("bridge", ""), ("host", "a"), ("host", "b")]
    assert all(s["value"] > 0 for s in p50)
    assert not [s for s in samples if s["metric"] == "trial_failed"]
    histograms = (out / "histograms.jsonl").read_text().splitlines()
    assert histograms and all(json.loads(line) for line in histograms)

    assert len(run_ids) == 3
    for run_id in run_ids:
        assert _objects_of(run_id) == [], run_id


def test_quiet_record_has_one_entry_per_measured_trial(tmp_path: Path) -> None:
    raw = {**json.loads(json.dumps(TINY)), "layers": ["host"], "warmup": 1}
    sf = expand(raw, str(tmp_path / "warm.yaml"))
    out = tmp_path / "run"
    try:
        outcome = run_scenario(sf, out, progress=lambda _m: None)
    finally:
        run_ids = [json.loads(p.read_text())["run_id"]
                   for p in sorted((out / "raw").glob("trial-*/lab.json"))]
        for run_id in run_ids:
            assert _objects_of(run_id) == [], run_id
    assert outcome.trials_done == 2  # host as A/A groups a and b
    quiet = json.loads((out / "run.json").read_text())["environment"]["controls"]["quiet"]
    measured = [t["trial"] for t in quiet["trials"] if not t.get("warmup")]
    assert sorted(measured) == [0, 1], quiet["trials"]


def test_realtime_sets_every_thread_and_reports_a_gone_process() -> None:
    from vnetbench.host.realtime import is_realtime, realtime

    threads = ("import threading, time\n"
               "for _ in range(3): threading.Thread(target=time.sleep, args=(30,)).start()\n"
               "time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", threads])
    try:
        deadline = time.monotonic() + 10
        while len(os.listdir(f"/proc/{proc.pid}/task")) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert realtime(proc.pid) == 4  # the main thread and its three
        assert is_realtime(proc.pid)
        assert all(os.sched_getscheduler(int(t)) == os.SCHED_FIFO
                   for t in os.listdir(f"/proc/{proc.pid}/task"))
    finally:
        proc.kill()
        proc.wait()
    assert realtime(proc.pid) == 0 and not is_realtime(proc.pid)  # gone: nothing set


def test_a_workload_failing_with_an_os_error_fails_its_trial_not_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file or program a workload needs that is not there (an ``OSError``, not one of
    vnetbench's own errors) is that trial's failure, said in one line; the other trials run,
    and the lab is torn down."""
    real_run_workload = trial_mod._run_workload

    def run_workload(lab: Lab, *args: Any, **kwargs: Any) -> Any:
        if lab.plan.layer.name == "bridge":
            raise FileNotFoundError(2, "No such file or directory", "/nonexistent/tool")
        return real_run_workload(lab, *args, **kwargs)

    monkeypatch.setattr(trial_mod, "_run_workload", run_workload)
    sf = expand(json.loads(json.dumps(TINY)), str(tmp_path / "tiny.yaml"))
    out = tmp_path / "run"
    outcome = run_scenario(sf, out, progress=lambda _m: None)
    assert (outcome.trials_done, outcome.trials_failed) == (3, 1)
    failed = [s for s in outcome.samples if s.metric == "trial_failed"]
    assert [(s.labels["layer"], s.labels["stage"]) for s in failed] == [("bridge", "workload rr")]
    assert {s.labels["layer"] for s in outcome.samples if s.metric == "rtt_p50_us"} == {"host"}
    warnings = json.loads((out / "run.json").read_text())["warnings"]
    assert any("failed at workload rr" in w["message"] and "/nonexistent/tool" in w["message"]
               for w in warnings), warnings
    for lab_json in (out / "raw").glob("trial-*/lab.json"):
        assert _objects_of(json.loads(lab_json.read_text())["run_id"]) == []
