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
    def __init__(self, nodes: list[_Node], stop_fails: bool = False) -> None:
        self.nodes = nodes
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
    monkeypatch.setattr(probe_workload.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(probe_workload, "find_binary", lambda _name: Path("/bin/true"))
    return tmp_path


def test_prepare_failing_before_a_server_removes_its_log_directory(tmp: Path) -> None:
    workload = rr_workload(RrOptions())
    with pytest.raises(WorkloadError, match="needs 2 nodes"):
        workload.prepare(_Lab([_Node(False)]))  # type: ignore[arg-type]
    assert list(tmp.iterdir()) == []


def test_prepare_failing_after_a_server_stops_it_and_removes_the_logs(tmp: Path) -> None:
    workload = rr_workload(RrOptions())
    lab = _Lab([_Node(True), _Node(True)])
    with pytest.raises(VnetbenchError, match="nothing listens"):
        workload.prepare(lab)  # type: ignore[arg-type]
    assert len(lab.stopped) == 1
    assert list(tmp.iterdir()) == []


def test_cleanup_removes_the_logs_when_stopping_a_server_fails(tmp: Path) -> None:
    workload = rr_workload(RrOptions())
    lab = _Lab([_Node(False), _Node(False)], stop_fails=True)
    workload.prepare(lab)  # type: ignore[arg-type]
    assert len(list(tmp.iterdir())) == 1
    with pytest.raises(VnetbenchError, match="could not stop"):
        workload.cleanup(lab)  # type: ignore[arg-type]
    assert list(tmp.iterdir()) == []
