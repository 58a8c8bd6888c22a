"""Unit tests of the platform controls on stand-ins for the machine's files.

Nothing here touches the real ``/dev/cpu_dma_latency`` or cpufreq: the idle-state hold is
pointed at a temporary file (or a FIFO, which reads back what was written as the device
does), the governor at a fake sysfs tree, the quiet check at fake ``/proc/stat`` contents.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vnetbench.run import platform as platform_control
from vnetbench.run.platform import (
    GovernorHold,
    IdleStateHold,
    PlatformControls,
    QuietCheck,
    busy_cores,
    cpu_times,
)

DEFAULT_LATENCY = 2_000_000_000
"""The value /dev/cpu_dma_latency reads when no one holds it (PM_QOS default, µs)."""


def _open_fds_to(path: Path) -> int:
    target = str(path)
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == target:
                count += 1
        except OSError:
            continue
    return count


# ---- IdleStateHold ---------------------------------------------------------------------------

def test_idle_hold_writes_a_zero_int32_and_holds_the_file(tmp_path: Path) -> None:
    dev = tmp_path / "cpu_dma_latency"
    dev.write_bytes(struct.pack("i", DEFAULT_LATENCY))
    hold = IdleStateHold(dev)
    status = hold.open()
    try:
        assert status.requested
        assert dev.read_bytes()[:4] == struct.pack("i", 0)  # exactly 4 bytes of int32 0
        assert len(dev.read_bytes()) == 4
        assert _open_fds_to(dev) == 1  # held open: the kernel drops the request on close
        assert str(dev) in status.detail
    finally:
        hold.close()
    assert _open_fds_to(dev) == 0
    hold.close()  # closing twice is harmless


def test_idle_hold_on_a_regular_file_is_effective_from_read_back(tmp_path: Path) -> None:
    dev = tmp_path / "cpu_dma_latency"
    dev.write_bytes(struct.pack("i", DEFAULT_LATENCY))
    hold = IdleStateHold(dev)
    try:
        status = hold.open()
        assert status.effective, status.detail
        assert "read back 0" in status.detail
    finally:
        hold.close()


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO standing in for the device: reading returns what is in it, from the start."""
    path = tmp_path / "cpu_dma_latency"
    os.mkfifo(path)
    yield path


def test_idle_hold_effective_when_zero_reads_back(fifo: Path) -> None:
    hold = IdleStateHold(fifo)
    try:
        status = hold.open()
        assert status.effective
        assert "read back 0" in status.detail
    finally:
        hold.close()


def test_idle_hold_not_effective_when_something_else_reads_back(fifo: Path) -> None:
    # another value is waiting in the FIFO: the read-back sees it (as the device would show
    # a value other than 0 if the request did not take)
    keeper = os.open(fifo, os.O_RDWR)
    try:
        os.write(keeper, struct.pack("i", 55))
        hold = IdleStateHold(fifo)
        try:
            status = hold.open()
            assert not status.effective
            assert "read back 55" in status.detail
        finally:
            hold.close()
    finally:
        os.close(keeper)


def test_idle_hold_missing_path_is_not_effective(tmp_path: Path) -> None:
    hold = IdleStateHold(tmp_path / "absent")
    status = hold.open()
    assert status.requested and not status.effective
    assert "cannot open" in status.detail and "absent" in status.detail
    hold.close()


def test_idle_hold_write_failure_is_not_effective(tmp_path: Path) -> None:
    """A directory opens O_RDWR with EISDIR: reported, nothing held."""
    hold = IdleStateHold(tmp_path)
    status = hold.open()
    assert not status.effective and status.detail


# ---- GovernorHold ----------------------------------------------------------------------------

def _fake_cpufreq(root: Path, governors: dict[int, str]) -> dict[int, Path]:
    files = {}
    for cpu, gov in governors.items():
        d = root / f"cpu{cpu}" / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(gov + "\n")
        files[cpu] = d / "scaling_governor"
    return files


def test_governor_set_to_performance_and_restored(tmp_path: Path) -> None:
    files = _fake_cpufreq(tmp_path, {0: "powersave", 1: "schedutil", 2: "performance"})
    decoy = tmp_path / "cpufreq" / "policy0"
    decoy.mkdir(parents=True)
    (decoy / "scaling_governor").write_text("powersave\n")
    hold = GovernorHold(tmp_path)
    status = hold.open()
    try:
        assert status.effective and "3 CPU(s)" in status.detail
        assert {f.read_text().strip() for f in files.values()} == {"performance"}
        assert (decoy / "scaling_governor").read_text() == "powersave\n"  # not a cpuN dir
    finally:
        hold.close()
    assert files[0].read_text().strip() == "powersave"
    assert files[1].read_text().strip() == "schedutil"
    assert files[2].read_text().strip() == "performance"


def test_governor_other_wanted_value(tmp_path: Path) -> None:
    files = _fake_cpufreq(tmp_path, {0: "powersave"})
    hold = GovernorHold(tmp_path, wanted="ondemand")
    assert hold.open().effective
    assert files[0].read_text().strip() == "ondemand"
    hold.close()
    assert files[0].read_text().strip() == "powersave"


def test_no_cpufreq_says_so(tmp_path: Path) -> None:
    (tmp_path / "cpu0").mkdir()
    (tmp_path / "cpu1").mkdir()
    status = GovernorHold(tmp_path).open()
    assert status.requested and not status.effective
    assert "no cpufreq" in status.detail


def test_governor_problems_are_reported(tmp_path: Path) -> None:
    files = _fake_cpufreq(tmp_path, {0: "powersave"})
    bad = tmp_path / "cpu1" / "cpufreq" / "scaling_governor"
    bad.mkdir(parents=True)  # unreadable as a file
    hold = GovernorHold(tmp_path)
    status = hold.open()
    try:
        assert not status.effective
        assert "could not set" in status.detail and "cpu1" in status.detail
        assert files[0].read_text().strip() == "performance"
    finally:
        hold.close()
    assert files[0].read_text().strip() == "powersave"


# ---- cpu_times / busy_cores -------------------------------------------------------------------

STAT = """cpu  {user} 0 {system} {idle} {iowait} 0 0 0 0 0
cpu0 1 0 1 1 0 0 0 0 0 0
intr 12345
"""


def _stat(path: Path, user: int, system: int, idle: int, iowait: int) -> Path:
    path.write_text(STAT.format(user=user, system=system, idle=idle, iowait=iowait))
    return path


def test_cpu_times_busy_excludes_idle_and_iowait(tmp_path: Path) -> None:
    stat = _stat(tmp_path / "stat", user=100, system=50, idle=800, iowait=50)
    assert cpu_times(stat) == (150.0, 1000.0)


def test_cpu_times_ignores_guest_columns(tmp_path: Path) -> None:
    """guest and guest_nice (columns 9-10) are already counted in user and nice."""
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 10 50 800 40 5 5 0 70 3\n")
    assert cpu_times(stat) == (170.0, 1010.0)


def test_cpu_times_of_this_machine() -> None:
    busy, total = cpu_times()
    assert 0.0 <= busy <= total and total > 0.0


def test_busy_cores_over_a_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stat = _stat(tmp_path / "stat", user=1000, system=0, idle=1000, iowait=0)
    slept: list[float] = []

    def advance(seconds: float) -> None:  # during the window: 150 busy, 250 idle jiffies
        slept.append(seconds)
        _stat(stat, user=1100, system=50, idle=1200, iowait=50)

    monkeypatch.setattr(time, "sleep", advance)  # the module platform_control uses
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert busy_cores(0.1, stat) == pytest.approx(150 / 400 * 4)
    assert slept == [0.1]


def test_busy_cores_without_progress_is_zero(tmp_path: Path) -> None:
    stat = _stat(tmp_path / "stat", user=1, system=1, idle=1, iowait=1)
    assert busy_cores(0.0, stat) == 0.0


def test_busy_cores_of_this_machine() -> None:
    busy = busy_cores(0.05)
    assert 0.0 <= busy <= (os.cpu_count() or 1) + 1e-9


# ---- QuietCheck ------------------------------------------------------------------------------

def _scripted(monkeypatch: pytest.MonkeyPatch, values: list[float]) -> list[float]:
    """busy_cores returns ``values`` in turn (the last one forever); returns the calls."""
    calls: list[float] = []

    def fake(window_s: float = 0.0, stat: Path = Path("/proc/stat")) -> float:
        value = values[min(len(calls), len(values) - 1)]
        calls.append(value)
        return value

    monkeypatch.setattr(platform_control, "busy_cores", fake)
    return calls


def test_quiet_machine_runs_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _scripted(monkeypatch, [0.1])
    check = QuietCheck(threshold_cores=0.3, wait_s=5.0)
    seen = check.wait(7)
    assert seen["quiet"] and seen["trial"] == 7 and seen["busy_cores"] == pytest.approx(0.1)
    assert seen["waited_s"] < 1.0 and len(calls) == 1
    assert check.results == [seen]


def test_busy_machine_waits_until_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _scripted(monkeypatch, [1.5, 0.9, 0.2])
    seen = QuietCheck(threshold_cores=0.3, wait_s=5.0).wait(1)
    assert seen["quiet"] and seen["busy_cores"] == pytest.approx(0.2)
    assert len(calls) == 3


def test_busy_machine_runs_anyway_after_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _scripted(monkeypatch, [1.5])
    check = QuietCheck(threshold_cores=0.3, wait_s=0.02)
    seen = check.wait(3)
    assert not seen["quiet"] and seen["busy_cores"] == pytest.approx(1.5)
    assert len(calls) >= 2 and seen["waited_s"] < 2.0


def test_threshold_is_inclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    _scripted(monkeypatch, [0.3])
    assert QuietCheck(threshold_cores=0.3, wait_s=0.0).wait(0)["quiet"]


def test_quiet_check_on_this_machine_with_a_generous_threshold() -> None:
    seen = QuietCheck(threshold_cores=float(os.cpu_count() or 1) + 1.0, wait_s=0.0).wait(0)
    assert seen["quiet"]


# ---- PlatformControls record ------------------------------------------------------------------

def test_controls_off_are_recorded_as_not_requested() -> None:
    controls = PlatformControls(idle=False, governor=False, quiet=None)
    controls.open()
    try:
        out = controls.to_dict()
    finally:
        controls.close()
    assert out["idle_states"] == {"requested": False, "effective": False,
                                  "detail": "off in the scenario"}
    assert out["governor"]["requested"] is False
    assert out["quiet"]["requested"] is False
    assert out["placement"]["requested"] is False and out["placement"]["effective"] is False


def test_controls_record_placement_and_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    _scripted(monkeypatch, [0.1, 2.0])
    quiet = QuietCheck(threshold_cores=0.3, wait_s=0.0)
    controls = PlatformControls(idle=False, governor=False, quiet=quiet)
    quiet.wait(0)
    quiet.wait(1)
    controls.note_placement("cross", "cross: nodes n0->cpu0, n1->cpu1; host daemons h0->cpu0")
    controls.note_placement("cross", "cross: nodes n0->cpu0, n1->cpu1; host daemons h0->cpu0")
    out = controls.to_dict()
    assert out["placement"]["requested"] and out["placement"]["mode"] == "cross"
    assert out["placement"]["effective"]
    assert "(2 trials)" in out["placement"]["detail"]
    assert out["quiet"]["requested"] and not out["quiet"]["effective"]
    assert "1 of 2 trial(s)" in out["quiet"]["detail"]
    assert [t["quiet"] for t in out["quiet"]["trials"]] == [True, False]
    controls.note_misses(["probe (pid 1) on CPUs [0, 1], placed on [1]"])
    out = controls.to_dict()
    assert not out["placement"]["effective"]
    assert "not as placed" in out["placement"]["detail"]


def test_unpinned_trials_are_not_an_effective_placement() -> None:
    controls = PlatformControls(idle=False, governor=False, quiet=None)
    controls.note_placement("off", "not pinned")
    out = controls.to_dict()["placement"]
    assert not out["requested"] and not out["effective"]


def test_deliberately_unpinned_trials_are_not_a_failed_control() -> None:
    from vnetbench.results.warnings import control_warnings
    from vnetbench.run.platform import PlatformControls

    apps = PlatformControls(idle=False, governor=False)
    apps.note_placement("cross", "not pinned", "oltp run unpinned (set platform.placement ...)")
    placement = apps.to_dict()["placement"]
    assert not placement["requested"] and "oltp run unpinned" in placement["detail"]
    assert not [w for w in control_warnings(apps.to_dict()) if "placement" in w.message]
    missed = PlatformControls(idle=False, governor=False)
    missed.note_placement("cross", "cross: nodes n0->cpu0")
    missed.note_misses(["probe (pid 1) on CPUs [0, 1], placed on [0]"])
    assert [w for w in control_warnings(missed.to_dict()) if "placement" in w.message]


@pytest.fixture(autouse=True)
def _own_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The governor's hold is recorded in the test's own state directory."""
    from vnetbench.host import state

    monkeypatch.setattr(state, "STATE_DIR", tmp_path / "state")


def test_two_runs_ending_in_either_order_leave_the_machines_own_governor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run A sets performance where the machine had powersave; run B starts while A holds
    it. Whichever ends first leaves it to the other; the last puts powersave back. A run
    killed while holding it: ``clean`` puts it back."""
    import os
    import subprocess

    from vnetbench.cli import clean as clean_mod
    from vnetbench.host import holds
    from vnetbench.host.state import process_start_time

    other = subprocess.Popen(["sleep", "60"])  # stands for the second run's process
    runs = {"a": [os.getpid(), process_start_time(os.getpid())],
            "b": [other.pid, process_start_time(other.pid)]}
    try:
        for first, second in (("a", "b"), ("b", "a")):
            files = _fake_cpufreq(tmp_path / f"{first}{second}", {0: "powersave"})
            hold = {}
            for run in ("a", "b"):
                monkeypatch.setattr(holds, "_me", lambda run=run: runs[run])
                hold[run] = GovernorHold(tmp_path / f"{first}{second}")
                assert hold[run].open().effective
            monkeypatch.setattr(holds, "_me", lambda run=first: runs[run])
            hold[first].close()
            assert files[0].read_text().strip() == "performance"  # the other still holds it
            monkeypatch.setattr(holds, "_me", lambda run=second: runs[run])
            hold[second].close()
            assert files[0].read_text().strip() == "powersave", (first, second)
        killed = _fake_cpufreq(tmp_path / "killed", {0: "schedutil"})
        monkeypatch.setattr(holds, "_me", lambda: runs["b"])
        assert GovernorHold(tmp_path / "killed").open().effective
        other.kill()
        other.wait()
        assert killed[0].read_text().strip() == "performance"
        monkeypatch.setattr(clean_mod, "NETNS_DIR", tmp_path / "netns")
        monkeypatch.setattr(clean_mod, "DISK_WORK_ROOT", tmp_path / "work")
        monkeypatch.setattr(clean_mod, "leftover_cgroups", lambda: [])
        done = clean_mod.clean().done
        assert killed[0].read_text().strip() == "schedutil"
        assert any("restored" in line for line in done)
    finally:
        other.kill()
        other.wait()
