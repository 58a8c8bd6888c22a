"""The probe's client/server workload leaves nothing behind when its set-up fails: the
servers it started are stopped and its log directory is removed (a failed ``prepare`` used
to leave ``vnbp-serve-*`` directories in the temporary directory)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vnetbench.errors import VnetbenchError, WorkloadError
from vnetbench.workloads.probe import workload as probe_workload
from vnetbench.workloads.probe.workload import RrOptions, rr_workload


class _Node:
    host = 0
    name = "n"

    def __init__(self, fail_listening: bool) -> None:
        self.fail_listening = fail_listening

    def spawn(self, argv: list[str], log: Path) -> Any:
        log.write_text("listening\n")
        return object()

    def wait_listening(self, port: int, proto: str = "tcp", timeout: float = 10.0) -> None:
        if self.fail_listening:
            raise VnetbenchError(f"nothing listens on {port}")


class _Lab:
    def __init__(self, nodes: list[_Node], work_dir: Path, stop_fails: bool = False) -> None:
        self.nodes = nodes
        self.work_dir = work_dir
        self.stopped: list[object] = []
        self.stop_fails = stop_fails

    def listen_port(self, node: _Node, port: int) -> int:
        return port

    def stop(self, proc: object) -> None:
        self.stopped.append(proc)
        if self.stop_fails:
            raise VnetbenchError("could not stop")


@pytest.fixture
def tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The run's work directory (the system's temporary directory is another, kept empty)."""
    elsewhere = tmp_path / "tmp"
    elsewhere.mkdir()
    monkeypatch.setattr(probe_workload.tempfile, "tempdir", str(elsewhere))
    monkeypatch.setattr(probe_workload, "find_binary", lambda _name: Path("/bin/true"))
    work = tmp_path / "work"
    work.mkdir()
    return work


def test_prepare_failing_before_a_server_removes_its_log_directory(tmp: Path) -> None:
    workload = rr_workload(RrOptions())
    with pytest.raises(WorkloadError, match="needs 2 nodes"):
        workload.prepare(_Lab([_Node(False)], tmp))  # type: ignore[arg-type]
    assert list(tmp.iterdir()) == []


def test_prepare_failing_after_a_server_stops_it_and_removes_the_logs(tmp: Path) -> None:
    workload = rr_workload(RrOptions())
    lab = _Lab([_Node(True), _Node(True)], tmp)
    with pytest.raises(VnetbenchError, match="nothing listens"):
        workload.prepare(lab)  # type: ignore[arg-type]
    assert len(lab.stopped) == 1
    assert list(tmp.iterdir()) == []


def test_cleanup_removes_the_logs_when_stopping_a_server_fails(tmp: Path) -> None:
    workload = rr_workload(RrOptions())
    lab = _Lab([_Node(False), _Node(False)], tmp, stop_fails=True)
    workload.prepare(lab)  # type: ignore[arg-type]
    assert len(list(tmp.iterdir())) == 1
    with pytest.raises(VnetbenchError, match="could not stop"):
        workload.cleanup(lab)  # type: ignore[arg-type]
    assert list(tmp.iterdir()) == []


def test_the_servers_logs_live_in_the_runs_work_directory(tmp: Path) -> None:
    """So a SIGKILLed run leaves none in the system's temporary directory: ``clean``
    removes the work directory with the run's other files."""
    workload = rr_workload(RrOptions())
    lab = _Lab([_Node(False), _Node(False)], tmp)
    workload.prepare(lab)  # type: ignore[arg-type]
    (logs,) = tmp.iterdir()
    assert logs.name.startswith("vnbp-serve-") and (logs / "serve0.log").is_file()
    assert list((tmp.parent / "tmp").iterdir()) == []
    workload.cleanup(lab)  # type: ignore[arg-type]
    assert list(tmp.iterdir()) == []
