"""Liveness reads the process state: a killed process its parent has not reaped yet (a
zombie, state Z in /proc/PID/stat) is not alive, so ``clean`` takes its run for dead and
``exec``/``down`` do not take its lab for a kept one. A running process is alive; a PID
whose start time differs (reused) is not."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vnetbench.host.state import RunState, process_alive, process_start_time


def _state_field(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def zombie() -> Iterator[int]:
    """A SIGKILLed child this process does not reap (until the test ends)."""
    proc = subprocess.Popen(["sleep", "60"])
    start = process_start_time(proc.pid)
    assert start is not None
    os.kill(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _state_field(proc.pid) != "Z":  # never poll(): that would reap it
        assert time.monotonic() < deadline, "the killed child never became a zombie"
        time.sleep(0.01)
    try:
        yield proc.pid
    finally:
        proc.wait()


def test_a_zombie_is_not_alive(zombie: int) -> None:
    start = process_start_time(zombie)
    assert start is not None  # /proc/PID/stat is still there: "the pid exists"
    assert not process_alive(zombie, start)
    assert not process_alive(zombie)


def test_a_run_whose_owner_is_a_zombie_is_dead(zombie: int) -> None:
    state = RunState("f00d", "10.250", zombie, process_start_time(zombie))
    assert not state.owner_alive()


def test_a_running_process_is_alive_and_a_reused_pid_is_not() -> None:
    proc = subprocess.Popen(["sleep", "60"])
    try:
        start = process_start_time(proc.pid)
        assert start is not None
        assert process_alive(proc.pid, start)
        assert process_alive(proc.pid)
        assert not process_alive(proc.pid, start + 1)
    finally:
        proc.kill()
        proc.wait()
    assert not process_alive(proc.pid, start)
