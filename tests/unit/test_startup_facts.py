"""The command's quick start-up and exit (``startup``) and the facts of the fingerprint read
without a process (``gitinfo``, ``sysinfo.os_name``)."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from vnetbench.provenance.gitinfo import parse_status
from vnetbench.provenance.sysinfo import os_name
from vnetbench.run import startup


def test_git_status_gives_commit_and_dirty_flag() -> None:
    clean = "# branch.oid 0123abcd\n# branch.head main\n"
    assert parse_status(clean, 0) == {"commit": "0123abcd", "dirty": False}
    changed = clean + "1 .M N... 100644 100644 100644 a b src/x.py\n"
    assert parse_status(changed, 0) == {"commit": "0123abcd", "dirty": True}
    assert parse_status(clean + "? new.txt\n", 0)["dirty"] is True
    assert parse_status("# branch.oid (initial)\n", 0)["commit"] == "unknown"
    assert parse_status("fatal: not a git repository\n", 128) == {"commit": "unknown",
                                                                   "dirty": False}


def test_os_name_reads_pretty_name_unquoted(tmp_path: Path) -> None:
    release = tmp_path / "os-release"
    release.write_text('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')
    assert os_name((tmp_path / "absent", release)) == "Debian GNU/Linux 12 (bookworm)"
    release.write_text("PRETTY_NAME=Plain\n")
    assert os_name((release,)) == "Plain"
    assert os_name((tmp_path / "absent",)) == "unknown"


def test_gc_pause_and_resume() -> None:
    assert gc.isenabled()
    startup.pause_gc()
    try:
        assert not gc.isenabled()
    finally:
        startup.resume_gc()
    assert gc.isenabled()
    startup.resume_gc()  # a second resume changes nothing
    assert gc.isenabled()
    gc.unfreeze()


def test_leave_runs_atexit_handlers_and_keeps_the_exit_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = ("import atexit, sys, threading, time\n"
            "from vnetbench.run.startup import leave\n"
            f"atexit.register(lambda: open({str(marker)!r}, 'w').write('atexit'))\n"
            "done = []\n"
            "t = threading.Thread(target=lambda: (time.sleep(0.2), done.append(1), "
            "print('thread', flush=True)))\n"
            "t.start()\n"
            "sys.stdout.write('buffered')\n"
            "leave(3)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 3
    assert proc.stdout.startswith("buffered")  # flushed before the exit
    assert "thread" in proc.stdout  # a thread that is no daemon was waited for
    assert marker.read_text() == "atexit"
