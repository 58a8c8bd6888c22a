"""Damaged result directories and bad output paths give one line and exit 2, never a traceback.

Every damaged run directory is a copy of a recorded run (``tests/data/evidence``) with one
thing broken, run through ``report``, ``compare`` (either side) and ``export`` as a user
would: ``python3 -m vnetbench ...`` in a subprocess, from an empty working directory. Also:
``export --out`` that cannot be written, and stdout closed early (``| head``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = ROOT / "tests" / "data" / "evidence"
BASE = EVIDENCE / "run_sweep"

Damage = Callable[[Path], None]


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": str(ROOT / "src") + (os.pathsep + path if path else "")}


def _vnetbench(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "vnetbench", *args], cwd=cwd, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# ---- the damage ------------------------------------------------------------------------------

def _run_json(content: bytes) -> Damage:
    def damage(run: Path) -> None:
        (run / "run.json").write_bytes(content)
    return damage


def _field(name: str, value: object) -> Damage:
    def damage(run: Path) -> None:
        meta = json.loads((run / "run.json").read_text())
        meta[name] = value
        (run / "run.json").write_text(json.dumps(meta))
    return damage


def _sample_line(content: bytes, number: int = 5) -> Damage:
    """Replace line ``number`` (1-based; -1: add a last line) of samples.jsonl."""
    def damage(run: Path) -> None:
        path = run / "samples.jsonl"
        lines = path.read_bytes().splitlines()
        if number == -1:
            lines.append(content)
        else:
            lines[number - 1] = content
        path.write_bytes(b"\n".join(lines) + b"\n")
    return damage


def _run_json_is_a_directory(run: Path) -> None:
    (run / "run.json").unlink()
    (run / "run.json").mkdir()


SAMPLE = {"metric": "tps", "value": 1.0, "unit": "1/s", "labels": {"layer": "host"}, "t_ns": 1}


def _sample(**fields: object) -> bytes:
    return json.dumps({**SAMPLE, **fields}).encode()


CASES: dict[str, tuple[Damage, str]] = {
    # name: (damage, what the one line must mention)
    "run.json a list": (_run_json(b"[1, 2]\n"), "run.json is damaged: it holds a list"),
    "run.json a number": (_run_json(b"5"), "not a JSON object"),
    "run.json a string": (_run_json(b'"run"'), "not a JSON object"),
    "run.json null": (_run_json(b"null"), "not a JSON object"),
    "run.json empty": (_run_json(b""), "run.json is not valid JSON"),
    "run.json binary": (_run_json(bytes(range(256))), "run.json is not UTF-8"),
    "run.json latin-1": (_run_json('{"run_id": "caf\u00e9"}'.encode("latin-1")), "not UTF-8"),
    "run.json cut": (_run_json(b'{"run_id": "x", "scen'), "not valid JSON"),
    "run.json nested deeply": (_run_json(b"[" * 200_000), "run.json"),
    "run.json a directory": (_run_json_is_a_directory, "not a vnetbench run directory"),
    "warnings 5": (_field("warnings", 5), "'warnings' should be a list, found a number (5)"),
    "warnings [5]": (_field("warnings", [5]), "warnings[0] should be an object"),
    "warning labels 5": (_field("warnings", [{"kind": "other", "labels": 5}]),
                         "run.json warnings[0] is damaged: 'labels' should be an object"),
    "scenario []": (_field("scenario", []), "'scenario' should be an object, found a list"),
    "scenario a string": (_field("scenario", "x"), "'scenario' should be an object"),
    "environment x": (_field("environment", "x"), "'environment' should be an object"),
    "status 3": (_field("status", 3), "'status' should be a string, found a number (3)"),
    "status unknown": (_field("status", "exploded"), "unknown status 'exploded'"),
    "format_version a string": (_field("format_version", "1"), "'format_version' should be"),
    "format_version true": (_field("format_version", True), "found a boolean"),
    "format_version future": (_field("format_version", 99), "upgrade vnetbench"),
    "run_id a list": (_field("run_id", ["x"]), "'run_id' should be a string"),
    "started a number": (_field("started", 5), "'started' should be a string"),
    "finished an object": (_field("finished", {}), "'finished' should be a string or null"),
    "failing_stage a list": (_field("failing_stage", []), "'failing_stage'"),
    "sample a list": (_sample_line(b"[1, 2]"), "samples.jsonl:5: damaged sample line: a list"),
    "sample a number": (_sample_line(b"5"), "samples.jsonl:5: damaged sample line: a number"),
    "sample a string": (_sample_line(b'"tps"'), "samples.jsonl:5: damaged sample line"),
    "sample null": (_sample_line(b"null"), "samples.jsonl:5: damaged sample line: null"),
    "sample value a string": (_sample_line(_sample(value="fast")),
                              "'value' should be a number, found a string ('fast')"),
    "sample value true": (_sample_line(_sample(value=True)), "'value' should be a number"),
    "sample value null": (_sample_line(_sample(value=None)), "'value' should be a number"),
    "sample without value": (_sample_line(b'{"metric": "tps", "unit": "1/s"}'), "no 'value'"),
    "sample metric a number": (_sample_line(_sample(metric=5)), "'metric' should be a string"),
    "sample labels 5": (_sample_line(_sample(labels=5)), "'labels' should be an object"),
    "sample label a list": (_sample_line(_sample(labels={"layer": ["host"]})),
                            "label 'layer' should be a string, found a list"),
    "sample t_ns a string": (_sample_line(_sample(t_ns="now")), "'t_ns' should be an integer"),
    "sample cut mid-file": (_sample_line(b'{"metric": "tps", "va'), "samples.jsonl:5: corrupt"),
    "sample not UTF-8": (_sample_line(b'{"metric": "t\xffps"}'), "samples.jsonl:5: corrupt "
                         "sample line (not UTF-8 text)"),
    "last sample a list": (_sample_line(b"[1]", number=-1), "samples.jsonl:487: damaged"),
}


def _files(root: Path) -> dict[str, int]:
    """Every path under ``root`` with its size (-1 for a directory)."""
    return {str(p.relative_to(root)): -1 if p.is_dir() else p.stat().st_size
            for p in sorted(root.rglob("*"))}


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(a good run, an empty working directory, the tmp root)."""
    good = tmp_path / "good"
    shutil.copytree(BASE, good)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    return good, cwd, tmp_path


@pytest.mark.parametrize("case", list(CASES))
def test_damaged_run_gives_one_line(case: str, dirs: tuple[Path, Path, Path]) -> None:
    good, cwd, tmp = dirs
    damage, expected = CASES[case]
    bad = tmp / "bad"
    shutil.copytree(BASE, bad)
    damage(bad)
    before = _files(tmp)
    out = tmp / "export.csv"
    commands = {
        "report": ("report", str(bad)),
        "compare bad good": ("compare", str(bad), str(good)),
        "compare good bad": ("compare", str(good), str(bad)),
        "export": ("export", str(bad), "--out", str(out)),
    }
    procs = {name: _vnetbench(*argv, cwd=cwd) for name, argv in commands.items()}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=120)
        where = f"{case}: vnetbench {' '.join(commands[name])}"
        assert "Traceback" not in stderr, f"{where}\n{stderr}"
        lines = stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("vnetbench: error: "), f"{where}\n{stderr}"
        assert expected in lines[0], f"{where}\n{lines[0]}"
        assert proc.returncode == 2, where
        assert stdout == "", where
    assert _files(tmp) == before  # no report, no export, no temporary file left
    assert not out.exists()


EXPORT_TARGETS: dict[str, tuple[Callable[[Path], str], str]] = {
    "a directory": (lambda tmp: str(tmp / "cwd"), "it is a directory"),
    "the working directory": (lambda tmp: ".", "it is a directory"),
    "empty": (lambda tmp: "", "it is a directory"),
    "under a regular file": (lambda tmp: str(tmp / "good" / "run.json" / "x.csv"),
                             "run.json is not a directory"),
    "under /proc": (lambda tmp: "/proc/vnetbench-export-test.csv", "cannot export to"),
    "under /sys": (lambda tmp: "/sys/vnetbench-export-test/x.csv", "cannot export to"),
}


@pytest.mark.parametrize("target", list(EXPORT_TARGETS))
def test_export_to_an_unwritable_place_gives_one_line(target: str,
                                                      dirs: tuple[Path, Path, Path]) -> None:
    good, cwd, tmp = dirs
    make, expected = EXPORT_TARGETS[target]
    out = make(tmp)
    before = _files(tmp)
    proc = _vnetbench("export", str(good), "--out", out, cwd=cwd)
    stdout, stderr = proc.communicate(timeout=120)
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetbench: error: "), stderr
    assert expected in lines[0]
    assert proc.returncode == 2 and stdout == ""
    assert _files(tmp) == before
    assert not Path("/proc/vnetbench-export-test.csv").exists()
    assert not Path("/sys/vnetbench-export-test").exists()


def test_export_writes_where_asked(dirs: tuple[Path, Path, Path]) -> None:
    good, cwd, _ = dirs
    proc = _vnetbench("export", str(good), "--out", "sub/dir/s.json", "--format", "json", cwd=cwd)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert stdout == "wrote sub/dir/s.json\n"
    assert len(json.loads((cwd / "sub" / "dir" / "s.json").read_text())) == 486
    assert sorted(p.name for p in (cwd / "sub" / "dir").iterdir()) == ["s.json"]


# ---- stdout closed early ----------------------------------------------------------------------

def _closed_early(*args: str, cwd: Path) -> tuple[int, str]:
    """Run with stdout a pipe whose reader is gone before anything is written."""
    proc = _vnetbench(*args, cwd=cwd)
    assert proc.stdout is not None
    proc.stdout.close()
    _, stderr = proc.communicate(timeout=120)
    return proc.returncode, stderr


@pytest.mark.parametrize("argv", [
    ("schema",),
    ("plan", str(ROOT / "scenarios" / "quick.yaml"), "--commands"),
    ("compare", str(EVIDENCE / "run_layers"), str(EVIDENCE / "run_layers_b"), "--all"),
])
def test_closed_stdout_ends_quietly(argv: tuple[str, ...], tmp_path: Path) -> None:
    code, stderr = _closed_early(*argv, cwd=tmp_path)
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
    assert stderr == ""
    assert code == 141


def test_head_of_a_pipeline_has_no_traceback(tmp_path: Path) -> None:
    cmd = f"{sys.executable} -m vnetbench schema | head -c 10"
    done = subprocess.run(["sh", "-c", cmd], cwd=tmp_path, env=_env(), capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0
    assert len(done.stdout) == 10
    assert "Traceback" not in done.stderr and done.stderr == ""
