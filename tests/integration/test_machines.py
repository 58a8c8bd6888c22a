"""Labs on real machines over SSH, end to end: ``vnetbench run`` with ``hosts: [{ssh: ...}]``
against emulated machines running real OpenSSH servers (``machines.py``): rr, stream and
oltp on host, bridge, vxlan and wireguard; results carry each machine's facts and samples;
after success, Ctrl-C, and SIGKILL + ``vnetbench clean --host``, the machines are exactly as
before; every bad input is refused in one line per problem with nothing built."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from vnetbench.backends.machines.ssh import SSH_CONFIG_ENV
from vnetbench.host.features import kernel_features

from ..conftest import new_leftovers, signals_at_default
from .machines import TEST_USER, Machines, emulated_machines, new_key

pytestmark = pytest.mark.root

WORKLOADS = [{"rr": {"duration": "1s"}}, {"stream": {"duration": "1s"}},
             {"oltp": {"duration": "1s", "warmup": 0, "table_size": 1000, "tables": 1,
                       "threads": 2}}]


def scenario(tmp: Path, m: Machines, layers: list[str], workloads: list[Any],
             top: dict[str, Any] | None = None, **hosts_extra: Any) -> Path:
    hosts = [{"ssh": s.ssh, "underlay": s.underlay, **hosts_extra} for s in m.specs]
    path = tmp / "machines.yaml"
    path.write_text(yaml.safe_dump({"name": "machines", "hosts": hosts, "nodes": 4,
                                    "layers": layers, "workloads": workloads,
                                    "noise_floor": False, **(top or {})}))
    return path


def vnetbench(*args: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vnetbench", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)


def local_leftovers() -> list[str]:
    """This box's namespaces of dead runs that appeared during the current test (another
    run on this machine, live or left before the test, is not this test's leftover)."""
    return [x for x in new_leftovers() if x.startswith("netns ")]


def test_run_on_machines_every_layer_and_workload(tmp_path: Path) -> None:
    with emulated_machines(2) as m:
        before = m.state()
        out = tmp_path / "out"
        # each layer once: paired trial blocks would measure host beside every layer (6
        # trials, not 4); pairing on machines is the README recipe's (test_readme_recipes)
        got = vnetbench("run", str(scenario(tmp_path, m, ["host", "bridge", "vxlan", "wireguard"],
                                             WORKLOADS, top={"pairing": "off"})),
                        "--out", str(out))
        assert got.returncode == 0, got.stderr[-2000:]
        assert m.state() == before
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    for layer in ("host", "bridge", "vxlan", "wireguard"):
        mine = [s for s in samples if s["labels"].get("layer") == layer]
        own = {(s["labels"].get("workload"), s["metric"]) for s in mine
               if "machine" not in s["labels"]}
        assert {("rr", "tps"), ("oltp", "tps")} <= own, (layer, own)
        assert any(w == "stream" and "goodput" in metric for w, metric in own), (layer, own)
        # evidence read on each machine, labelled with it
        machines = {s["labels"].get("machine") for s in mine if s["labels"].get("machine")}
        assert machines == {"h0", "h1"}, layer
    lab = json.loads(next(out.glob("raw/trial-*/lab.json")).read_text())
    facts = {f["target"]: f for f in lab["machines"]}
    assert set(facts) == {s.ssh for s in m.specs}
    for f in facts.values():
        assert f["uid"] == 0 and f["underlay"] == "eth1" and f["mtu"] == 1500
        assert f["address"] in m.addresses
        assert abs(f["clock_offset_s"]) < 1.0
    if not kernel_features().get("wireguard", False):  # wireguard-go ran on the machines
        logs = list(out.glob("raw/trial-*/machines/h*/wireguard-go-*.log"))
        assert len(logs) == 2, logs
    assert local_leftovers() == []


def wait_built(m: Machines, deadline_s: float = 60.0) -> None:
    """Until every machine holds the lab's node namespaces."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if all(len(mach["netns"]) >= 2 for mach in m.state()["machines"]):
            time.sleep(1.0)  # the build's later stages and the workload's start
            return
        time.sleep(0.2)
    raise AssertionError("the lab was not built on the machines in time")


@pytest.mark.parametrize("how", ["interrupt", "kill"])
def test_interrupted_and_killed_runs_leave_the_machines_as_they_were(
        tmp_path: Path, how: str) -> None:
    with emulated_machines(2) as m:
        before = m.state()
        path = scenario(tmp_path, m, ["wireguard"], [{"rr": {"duration": "60s"}}])
        proc = subprocess.Popen([sys.executable, "-m", "vnetbench", "run", str(path), "--out",
                                 str(tmp_path / "out")], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=signals_at_default)
        try:
            wait_built(m)
            assert m.state() != before
            proc.send_signal(signal.SIGINT if how == "interrupt" else signal.SIGKILL)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if how == "kill":
            assert m.state() != before  # a killed run cannot clean up: clean does
            for spec in m.specs:
                got = vnetbench("clean", "--host", spec.ssh)
                assert got.returncode == 0, got.stderr
                assert "removed what run vnb" in got.stdout, got.stdout
            again = vnetbench("clean", "--host", m.specs[0].ssh)
            assert "nothing to clean" in again.stdout
            vnetbench("clean")  # this box's part (state file, work directory)
        else:
            assert proc.returncode != 0 and "Traceback" not in err
        assert m.state() == before
    assert local_leftovers() == []


def refused(tmp_path: Path, m: Machines, layers: list[str], **hosts_extra: Any) -> list[str]:
    """The lines of a refused run (exit 2), after checking nothing was built anywhere."""
    before = m.state()
    got = vnetbench("run", str(scenario(tmp_path, m, layers, [{"rr": {"duration": "1s"}}],
                                        **hosts_extra)), "--out", str(tmp_path / "out"))
    assert got.returncode == 2, (got.returncode, got.stdout[-500:], got.stderr[-1500:])
    assert "Traceback" not in got.stderr
    assert m.state() == before
    assert local_leftovers() == []
    lines = [line for line in got.stderr.splitlines()
             if line.strip() and not line.startswith(("platform:", "["))]
    return lines


def test_bad_machines_are_refused_in_one_line_each(tmp_path: Path) -> None:
    with emulated_machines(2) as m:
        m.stop_machine(1)
        lines = refused(tmp_path, m, ["bridge"])
        assert len(lines) == 1 and m.specs[1].ssh in lines[0] and "cannot connect" in lines[0]
        m.start_machine(1)

        lines = refused(tmp_path, m, ["bridge"], underlay="eth9")
        assert len(lines) == 2 and all("eth9" in line for line in lines), lines

        lines = refused(tmp_path, m, ["ipvlan"])  # this kernel (every machine's) lacks it
        assert len(lines) == 2 and all("ipvlan" in line for line in lines), lines

        # another user made the work root first, writable by all: refused before any write
        planted = [*m.machines[0].enter(), "mkdir", "-m", "0777", "/var/tmp/vnetbench-remote"]
        subprocess.run(planted, check=True)
        try:
            lines = refused(tmp_path, m, ["bridge"])
            assert len(lines) == 1 and m.specs[0].ssh in lines[0], lines
            assert "writable by others" in lines[0], lines
        finally:
            subprocess.run([*m.machines[0].enter(), "rm", "-rf", "/var/tmp/vnetbench-remote"],
                           check=False)

        wrong = new_key(m.tmp, "wrong")
        # the fixture's config offers the authorized key: a config that does not
        keyless = tmp_path / "ssh_config"
        keyless.write_text("".join(line for line in m.ssh_config.read_text().splitlines(True)
                                   if "IdentityFile" not in line))
        os.environ[SSH_CONFIG_ENV] = str(keyless)
        try:
            lines = refused(tmp_path, m, ["bridge"], identity=str(wrong))
        finally:
            os.environ[SSH_CONFIG_ENV] = str(m.ssh_config)
        assert len(lines) == 2 and all("refused" in line for line in lines), lines

        path = tmp_path / "dup.yaml"
        path.write_text(yaml.safe_dump({"hosts": [{"ssh": m.specs[0].ssh, "underlay": "eth1"}] * 2,
                                        "layers": ["bridge"]}))
        got = vnetbench("run", str(path))
        assert got.returncode == 2 and "given twice" in got.stderr
        assert len(got.stderr.strip().splitlines()) == 1


def test_a_login_that_is_not_root_is_refused(tmp_path: Path) -> None:
    with emulated_machines(2, user=TEST_USER) as m:
        lines = refused(tmp_path, m, ["bridge"])
        assert len(lines) == 2 and all("root" in line for line in lines), lines
    assert os.geteuid() == 0


def _inside(m: Machines, i: int, script: str) -> str:
    """A shell script's output, run inside emulated machine ``i``."""
    return subprocess.run([*m.machines[i].enter(), "sh", "-c", script], capture_output=True,
                          text=True, check=True, timeout=30).stdout.strip()


def _wait_netns(m: Machines, count: int, deadline_s: float = 90.0) -> None:
    """Until every machine holds at least ``count`` namespaces of labs."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if all(len(mach["netns"]) >= count for mach in m.state()["machines"]):
            time.sleep(1.0)
            return
        time.sleep(0.2)
    raise AssertionError(f"the labs did not reach {count} namespaces per machine in time")


def test_two_runs_share_the_machines_and_a_second_controllers_run_is_left(
        tmp_path: Path) -> None:
    """Two runs on the same machines at once: the first to end leaves the sysctls the other
    still uses (ip_forward stays on), the last puts back the machine's own values. After a
    killed run, ``clean --host`` leaves a run another controller started (its ``controller``
    file names another machine) until ``--any-controller``; a PID the run recorded that now
    names another process (another start time) is not stopped."""
    forward = "net.ipv4.ip_forward"
    with emulated_machines(2) as m:
        for i in range(2):
            _inside(m, i, f"sysctl -q -w {forward}=0")
        before = m.state()
        path = scenario(tmp_path, m, ["bridge"], [{"rr": {"duration": "90s"}}])
        runs = []
        stranger: subprocess.Popen[bytes] | None = None
        try:
            for k in range(2):
                runs.append(subprocess.Popen(
                    [sys.executable, "-m", "vnetbench", "run", str(path), "--out",
                     str(tmp_path / f"out{k}")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    text=True, preexec_fn=signals_at_default))
                _wait_netns(m, 2 * (k + 1))
            assert all(_inside(m, i, f"sysctl -n {forward}") == "1" for i in range(2))
            runs[0].send_signal(signal.SIGINT)
            _, err = runs[0].communicate(timeout=120)
            assert runs[0].returncode != 0 and "Traceback" not in err
            # the other run still forwards: its value is kept until it lets go
            assert all(_inside(m, i, f"sysctl -n {forward}") == "1" for i in range(2))
            runs[1].send_signal(signal.SIGKILL)
            runs[1].communicate(timeout=60)
            left = {i: _inside(m, i, "ls -1d /var/tmp/vnetbench-remote/vnb*").split()
                    for i in range(2)}
            assert all(len(dirs) == 1 for dirs in left.values()), left
            # another controller's run, and a recorded PID that is now someone else's
            stranger = subprocess.Popen([*m.machines[0].enter(), "sleep", "300"])
            boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
            for i, (run_dir,) in left.items():
                _inside(m, i, f"echo 'otherbox 0123456789abcdef' > {run_dir}/controller")
                _inside(m, i, f"for f in {run_dir}/pids-h*; do "
                              f"echo '{stranger.pid} 1 {boot}' >> $f; done")
            for spec in m.specs:
                got = vnetbench("clean", "--host", spec.ssh)
                assert got.returncode == 0, got.stderr
                assert "left run vnb" in got.stdout and "otherbox" in got.stdout, got.stdout
            assert all(len(mach["netns"]) >= 2 for mach in m.state()["machines"])
            for spec in m.specs:
                got = vnetbench("clean", "--host", spec.ssh, "--any-controller")
                assert got.returncode == 0, got.stderr
                assert "removed what run vnb" in got.stdout, got.stdout
            assert stranger.poll() is None  # its PID was recorded, its start time was not
            vnetbench("clean")  # this box's part of the killed run
            assert m.state() == before  # ip_forward back to the machines' own 0
        finally:
            for proc in runs:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
            if stranger is not None:
                stranger.kill()
                stranger.wait()
    assert local_leftovers() == []
