"""Lifecycle on real namespaces: SIGTERM and Ctrl-C tear down; SIGKILL + `vnetbench clean`
removes leftovers; bad input builds nothing; the CLI's run/plan/doctor/clean work."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vnetbench.host.state import process_alive

from ..conftest import lab_leftovers, new_leftovers, settled, signals_at_default

pytestmark = pytest.mark.root

HOLDER = """
import sys, time
from vnetbench.backends.lab import open_lab
from vnetbench.lab.spec import LabSpec
with open_lab(LabSpec("bridge", hosts=2, nodes=3)) as lab:
    lab.nodes[0].spawn(["sleep", "300"])
    print(lab.run_id, flush=True)
    time.sleep(300)
"""


def _start_holder() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True,
                            preexec_fn=signals_at_default)
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    assert len(run_id) == 4, run_id
    return proc, run_id


def _objects_of(run_id: str) -> list[str]:
    return [x for x in lab_leftovers() if f"vnb{run_id}" in x]


def _processes_in_cgroups(run_id: str) -> list[str]:
    base = Path(f"/sys/fs/cgroup/cpuacct/vnb{run_id}")
    return [p.read_text() for p in base.glob("*/cgroup.procs")] if base.exists() else []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_tears_the_lab_down(sig: signal.Signals) -> None:
    proc, run_id = _start_holder()
    assert _objects_of(run_id), "the lab should exist while the holder runs"
    proc.send_signal(sig)
    proc.wait(30)
    assert proc.stdout is not None
    proc.stdout.close()
    assert _objects_of(run_id) == []
    assert not Path(f"/run/vnetbench/{run_id}.json").exists()


def test_sigkill_then_clean_removes_everything() -> None:
    proc, run_id = _start_holder()
    state = json.loads(Path(f"/run/vnetbench/{run_id}.json").read_text())
    sleeper = [pid for pid, _ in state["processes"]]
    disk = Path(f"/var/tmp/vnetbench/{run_id}")  # on-disk data of a workload (e.g. HDFS)
    (disk / "blocks").mkdir(parents=True)
    proc.kill()
    proc.wait(10)
    assert proc.stdout is not None
    proc.stdout.close()
    assert _objects_of(run_id), "SIGKILL cannot clean up; the leftovers must be there"
    out = subprocess.run([sys.executable, "-m", "vnetbench", "clean"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"vnb{run_id}" in out.stdout
    assert _objects_of(run_id) == []
    assert all(not process_alive(pid) for pid in sleeper)
    assert not Path(f"/run/vnetbench/{run_id}.json").exists()
    assert not disk.exists()


def test_clean_removes_a_killed_run_its_parent_has_not_reaped() -> None:
    """A SIGKILLed run stays a zombie until its parent (here: this test) reaps it; its lab
    is a dead run's all the same, and ``clean`` must remove it, not say "nothing to clean"."""
    proc, run_id = _start_holder()
    try:
        proc.kill()
        deadline = time.monotonic() + 10
        while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the killed run never became a zombie"
            time.sleep(0.01)
        assert _objects_of(run_id), "SIGKILL cannot clean up; the leftovers must be there"
        out = subprocess.run([sys.executable, "-m", "vnetbench", "clean"], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert f"removed state of run {run_id}" in out.stdout, out.stdout
        assert _objects_of(run_id) == []
        assert not Path(f"/run/vnetbench/{run_id}.json").exists()
    finally:
        proc.wait(10)  # reaped only now
        assert proc.stdout is not None
        proc.stdout.close()
        if _objects_of(run_id):  # the test failed: leave nothing behind all the same
            subprocess.run([sys.executable, "-m", "vnetbench", "clean"], capture_output=True,
                           timeout=60)


def test_clean_leaves_a_live_run_alone() -> None:
    proc, run_id = _start_holder()
    try:
        subprocess.run([sys.executable, "-m", "vnetbench", "clean"], capture_output=True, text=True, timeout=60)
        assert _objects_of(run_id), "clean removed a live run's objects"
    finally:
        proc.terminate()
        proc.wait(30)
        assert proc.stdout is not None
        proc.stdout.close()
    assert _objects_of(run_id) == []


BAD = {
    "unknown key": ("hosts: 1\nlayerz: [bridge]\n", "unknown key 'layerz'"),
    "bad unit": ("link: {delay: 10 parsecs}\n", "link.delay"),
    "unknown layer": ("layers: [bridge, teleport]\n", "unknown layer 'teleport'"),
    "too many nodes": ("nodes: 9000\n", "holds 8000 per host"),
    "not yaml": ("layers: [bridge\n", "not valid YAML"),
    "unsupported layer": ("layers: [ipvlan]\n", "ipvlan"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_scenario_one_line_error_nothing_built(case: str, tmp_path: Path) -> None:
    text, expected = BAD[case]
    if case == "unsupported layer":
        from vnetbench.host.features import kernel_features

        if kernel_features().get("ipvlan"):
            pytest.skip("this kernel has ipvlan")
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    out = subprocess.run([sys.executable, "-m", "vnetbench", "run", str(path), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "bad.yaml" in lines[0], lines
    assert settled(set(new_leftovers())) == set()  # other runs on the machine aside


def test_run_without_workloads_builds_and_tears_down(tmp_path: Path) -> None:
    scenario = tmp_path / "build.yaml"
    scenario.write_text("name: build\nhosts: 2\nnodes: 8\nlayers: [bridge, vxlan, routed]\n")
    out = subprocess.run([sys.executable, "-m", "vnetbench", "run", str(scenario), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    samples = [json.loads(line) for line in
               (tmp_path / "out" / "samples.jsonl").read_text().splitlines()]
    builds = [s for s in samples if s["metric"] == "lab_build_s"]
    assert {s["labels"]["layer"] for s in builds} == {"bridge", "vxlan", "routed"}
    assert all(0 < s["value"] < 30 for s in builds)


def test_plan_prints_without_touching_the_kernel(tmp_path: Path) -> None:
    scenario = tmp_path / "p.yaml"
    scenario.write_text("hosts: 2\nnodes: [2, 4]\nlayers: [vxlan, nat]\n"
                        "link: {delay: 5ms, rate: 100mbit}\n")
    out = subprocess.run([sys.executable, "-m", "vnetbench", "plan", str(scenario), "--commands"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("### ") == 4
    assert "type vxlan id 4242" in out.stdout and "fdb append" in out.stdout
    assert "DNAT" not in out.stdout or "-j DNAT" not in out.stdout  # ports publish on demand
    assert "tbf rate 100000000bit" in out.stdout and "vnetbench-linkem" in out.stdout
    assert settled(set(new_leftovers())) == set()  # other runs on the machine aside


def test_doctor_reports_features() -> None:
    out = subprocess.run([sys.executable, "-m", "vnetbench", "doctor"], capture_output=True, text=True, timeout=60)
    assert "kernel features:" in out.stdout and "ipvlan" in out.stdout
    assert "vxlan" in out.stdout


def test_clean_leaves_a_namespace_that_only_looks_like_ours() -> None:
    """``ip netns add vnbcafe-user`` (another user's, or a probe's scratch namespace): no run's
    state file records run ``cafe``, so ``clean`` leaves it (it deleted it)."""
    from vnetbench.cli.clean import clean
    from vnetbench.host.state import all_states

    if any(s.short_id == "cafe" for s in all_states()):
        pytest.skip("a run with id cafe is recorded here")
    name = "vnbcafe-user"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        done = clean().lines()
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert name in listed, done
        assert not any(name in line for line in done)
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)
