"""One rule for every path vnetbench writes or reads at a user's request (``userpaths``):
a regular file or a new name, else one line and exit 2, with the thing at that path left as
it was. Every special file here is this test's own (a FIFO, a device node made with mknod,
links to /dev/stdout and /dev/zero, a symlink loop, an over-long name, all in a temporary
directory): no real device is ever offered to the code under test."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from vnetbench.errors import VnetbenchError
from vnetbench.results.index import ResultIndex
from vnetbench.results.store import load_run
from vnetbench.run.outdir import prepare_out

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "evidence" / "run_sweep"
LONG = "a" * 300

Make = Callable[[Path], None]


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _device(p: Path) -> None:
    """A character device node with /dev/null's numbers (harmless should it be opened)."""
    if os.geteuid() != 0:
        pytest.skip("mknod needs root")
    os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))


def _link_to(target: str) -> Make:
    def make(p: Path) -> None:
        p.symlink_to(target)
    return make


def _loop(p: Path) -> None:
    p.symlink_to(p.name)


def _directory(p: Path) -> None:
    p.mkdir()


SPECIAL: dict[str, Make] = {
    "fifo": _fifo,
    "device node": _device,
    "link to /dev/stdout": _link_to("/dev/stdout"),
    "link to /dev/zero": _link_to("/dev/zero"),
    "link to a regular file": _link_to("real.txt"),
    "symlink loop": _loop,
    "directory": _directory,
}


def _snapshot(p: Path) -> tuple[int, int, str]:
    """What is at ``p`` (mode, device numbers, link target): must not change."""
    st = os.lstat(p)
    return st.st_mode, st.st_rdev, os.readlink(p) if p.is_symlink() else ""


def _vnetbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "vnetbench", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _one_line(proc: subprocess.CompletedProcess[str], expected: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetbench: error: "), proc.stderr
    assert expected in lines[0], lines[0]
    assert proc.stdout == ""


def _no_temp_files(where: Path) -> None:
    assert [p.name for p in where.iterdir() if p.name.endswith(".tmp")] == []


EXPECTED = {"fifo": "FIFO", "device node": "character device", "link to /dev/stdout":
            "symbolic link (to /dev/stdout)", "link to /dev/zero": "symbolic link",
            "link to a regular file": "symbolic link", "symlink loop": "symbolic link",
            "directory": "directory"}


@pytest.mark.parametrize("case", list(SPECIAL))
def test_export_out_is_never_replaced_unless_a_regular_file(tmp_path: Path, case: str) -> None:
    (tmp_path / "real.txt").write_text("mine")
    target = tmp_path / "out"
    SPECIAL[case](target)
    before = _snapshot(target)
    proc = _vnetbench("export", str(RUN), "--out", str(target), cwd=tmp_path)
    _one_line(proc, EXPECTED[case])
    assert _snapshot(target) == before
    assert (tmp_path / "real.txt").read_text() == "mine"
    _no_temp_files(tmp_path)


@pytest.mark.parametrize("out,expected", [
    ("loop/x.csv", "symlink loop"), (LONG, "255"), (f"{LONG}/x.csv", "255"),
    ("real.txt/x.csv", "real.txt is not a directory")])
def test_export_out_the_kernel_cannot_look_up_is_one_line(tmp_path: Path, out: str,
                                                          expected: str) -> None:
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "real.txt").write_text("mine")
    proc = _vnetbench("export", str(RUN), "--out", out, cwd=tmp_path)
    _one_line(proc, expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["loop", "real.txt"]


def test_export_replaces_a_regular_file_and_keeps_it_ordinary(tmp_path: Path) -> None:
    target = tmp_path / "s.csv"
    target.write_text("old")
    proc = _vnetbench("export", str(RUN), "--out", str(target), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert target.read_text().startswith("run_id,")
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_umask()
    _no_temp_files(tmp_path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("case", [c for c in SPECIAL if c != "link to a regular file"])
def test_report_html_is_never_replaced_unless_a_regular_file(tmp_path: Path, case: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    (run / "report.html").unlink(missing_ok=True)
    SPECIAL[case](run / "report.html")
    before = _snapshot(run / "report.html")
    proc = _vnetbench("report", str(run), cwd=tmp_path)
    _one_line(proc, "cannot write the report to")
    assert _snapshot(run / "report.html") == before
    _no_temp_files(run)


@pytest.mark.parametrize("case", [c for c in SPECIAL if c != "link to a regular file"])
def test_an_index_database_is_removed_only_if_a_regular_file(tmp_path: Path, case: str) -> None:
    target = tmp_path / "index.db"
    SPECIAL[case](target)
    before = _snapshot(target)
    with pytest.raises(VnetbenchError, match="index database"):
        ResultIndex.build([RUN], target)
    assert _snapshot(target) == before


@pytest.mark.parametrize("case", ["fifo", "device node", "link to /dev/stdout", "symlink loop",
                                  "dangling link", "long name", "under a file"])
def test_run_out_is_one_line_and_leaves_the_path_alone(tmp_path: Path, case: str) -> None:
    (tmp_path / "real.txt").write_text("mine")
    target = tmp_path / "out"
    if case == "dangling link":
        target.symlink_to(tmp_path / "missing")
    elif case == "long name":
        target = tmp_path / LONG
    elif case == "under a file":
        target = tmp_path / "real.txt" / "out"
    else:
        SPECIAL[case](target)
    before = _snapshot(target) if os.path.lexists(target) and case != "long name" else None
    with pytest.raises(VnetbenchError) as err:
        prepare_out(str(target), "s")
    message = str(err.value)
    assert message.startswith("--out ") and "\n" not in message
    if before is not None:
        assert _snapshot(target) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["real.txt"] + (["out"] if before is not None else []))


@pytest.mark.parametrize("name", ["samples.jsonl", "run.json", "histograms.jsonl"])
@pytest.mark.parametrize("case", ["fifo", "link to /dev/zero", "device node"])
def test_a_run_file_that_is_not_a_file_is_said_so(tmp_path: Path, name: str, case: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    (run / name).unlink(missing_ok=True)
    SPECIAL[case](run / name)
    with pytest.raises(VnetbenchError, match=rf"{name}.*not a file"):
        load_run(run)  # returns: a FIFO is never opened, /dev/zero never read
    proc = _vnetbench("report", str(run), cwd=tmp_path)
    _one_line(proc, "not a file")
    assert not (run / "report.html").exists()
