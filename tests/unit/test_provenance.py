"""run.json's ``programs``: each program found as the run finds it, with its version line and,
for the programs built here, the digest of its binary; cached until a program changes."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from vnetbench.provenance import record as provenance
from vnetbench.provenance.record import program_versions


def _program(path: Path, version: str) -> Path:
    path.write_text(f'#!/bin/sh\n[ "$1" = --version ] && echo "{version}"\nexit 0\n')
    path.chmod(0o755)
    return path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    file = tmp_path / "cache" / "program-versions.json"
    monkeypatch.setattr(provenance, "CACHE_FILE", file)
    return file


def test_the_programs_the_run_would_use_are_recorded(tmp_path: Path, cache: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _program(tmp_path / "my-probe", "vnetbench-probe 9.9.9")
    dockerd = _program(tmp_path / "my-dockerd", "Docker version 99.0, build test")
    monkeypatch.setenv("VNETBENCH_PROBE", str(probe))
    monkeypatch.setenv("VNETBENCH_DOCKERD", str(dockerd))
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    found = program_versions()
    assert found["vnetbench-probe"] == {
        "path": str(probe), "version": "vnetbench-probe 9.9.9",
        "sha256": hashlib.sha256(probe.read_bytes()).hexdigest()}
    assert found["dockerd"] == {"path": str(dockerd),
                                "version": "Docker version 99.0, build test"}
    mariadbd = found["mariadbd"]
    assert mariadbd["path"] is None and mariadbd["version"] == "absent"
    assert "mariadb-server" in mariadbd["why"]
    assert {"sysbench", "mpirun", "java", "hadoop", "wireguard-go",
            "vnetbench-linkem"} <= set(found)
    assert cache.is_file()


def test_a_changed_program_is_asked_again(tmp_path: Path, cache: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _program(tmp_path / "probe", "vnetbench-probe 1.0.0")
    monkeypatch.setenv("VNETBENCH_PROBE", str(probe))
    assert program_versions()["vnetbench-probe"]["version"] == "vnetbench-probe 1.0.0"
    assert program_versions()["vnetbench-probe"]["version"] == "vnetbench-probe 1.0.0"
    _program(probe, "vnetbench-probe 2.0.0")
    stat = probe.stat()
    os.utime(probe, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert program_versions()["vnetbench-probe"]["version"] == "vnetbench-probe 2.0.0"
