"""Which commit of vnetbench ran, and whether its tree was dirty (``run.json``'s
``environment.git``), asked of git while the command does other work.

One ``git status --porcelain=v2 --branch`` answers both (its ``# branch.oid`` line is the
commit; any line not starting with ``#`` is a change or an untracked file). ``start`` begins
it in the background (the command line calls it first thing, so git runs on another core
while Python imports the rest), ``git_facts`` waits for the answer, starting it if nobody
did. Outside a git checkout (an installed package), or without git, the commit is
``unknown`` and the tree counts as clean.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TypedDict

SOURCE_ROOT = Path(__file__).resolve().parents[3]
TIMEOUT_S = 10.0


class GitFacts(TypedDict):
    """The checkout's commit (``unknown`` outside one) and whether it has changes."""

    commit: str
    dirty: bool


_pending: subprocess.Popen[str] | None = None
_facts: GitFacts | None = None


def start(root: Path = SOURCE_ROOT) -> None:
    """Start asking git about ``root`` (once; later calls do nothing)."""
    global _pending
    if _pending is not None or _facts is not None:
        return
    try:
        _pending = subprocess.Popen(
            ["git", "-C", str(root), "status", "--porcelain=v2", "--branch"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)
    except OSError:  # no git
        _finish("", 1)


def git_facts(root: Path = SOURCE_ROOT) -> GitFacts:
    """``{"commit": sha or "unknown", "dirty": bool}`` of ``root``'s checkout."""
    global _pending
    start(root)
    if _pending is not None:
        proc, _pending = _pending, None
        try:
            out, _ = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            out = ""
        _finish(out, proc.returncode if proc.returncode is not None else 1)
    assert _facts is not None
    return _facts.copy()


def parse_status(out: str, returncode: int) -> GitFacts:
    """The facts in ``git status --porcelain=v2 --branch`` output (pure)."""
    if returncode != 0:
        return {"commit": "unknown", "dirty": False}
    commit = "unknown"
    dirty = False
    for line in out.splitlines():
        if line.startswith("# branch.oid "):
            oid = line.split()[2]
            commit = oid if oid != "(initial)" else "unknown"
        elif line and not line.startswith("#"):
            dirty = True
    return {"commit": commit, "dirty": dirty}


def _finish(out: str, returncode: int) -> None:
    global _facts
    _facts = parse_status(out, returncode)
