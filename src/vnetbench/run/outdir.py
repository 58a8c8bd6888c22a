"""Where a run writes: the output directory, chosen so nothing lands outside it.

* default: ``results/<UTC time>-<slug>-<6 hex>``; the slug is the scenario's name made safe
  (letters, digits, ``.``, ``_``, ``-``; at most ``SLUG_MAX`` characters; never ``..``), the
  random suffix keeps two runs started in the same second apart;
* ``--out DIR``: must be a new or an empty directory (a run is never mixed into another's
  files), not the empty string, not a file, not under a file, and not on a kernel filesystem
  (/proc, /sys, /dev): ``userpaths.output_dir``, the rule every path a user names follows
  (a symlink loop or an over-long name is one line too); as root, a directory that belongs
  to another user (neither root nor the one who ran ``sudo``) is refused, nothing written;
  the directory is claimed for one run (``CLAIM``, made exclusively, removed when the run
  ends): a second run started on the same ``--out`` at the same moment is refused.

Every refusal is a ``ScenarioError`` with one line that says what to give instead; the
directory is created here, before anything is built.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import secrets
from pathlib import Path

from vnetbench.errors import ScenarioError, VnetbenchError
from vnetbench.userpaths import output_dir, trusted_owners

SLUG_MAX = 40
RESULTS_ROOT = Path("results")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(name: str) -> str:
    """A file-name-safe, bounded form of ``name`` (``scenario`` when nothing is left)."""
    text = _UNSAFE.sub("-", name).strip(".-_")
    text = re.sub(r"\.{2,}", ".", text)[:SLUG_MAX].strip(".-_")
    return text or "scenario"


def default_out(name: str, root: Path = RESULTS_ROOT) -> Path:
    stamp = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}"
    return root / f"{stamp}-{slug(name)}-{secrets.token_hex(3)}"


def prepare_out(out: str | os.PathLike[str] | None, name: str) -> Path:
    """The run's output directory, created (empty); ScenarioError when ``out`` cannot be."""
    hint = "give a new or empty directory"
    try:
        path = default_out(name) if out is None else output_dir(out, "--out", hint)
    except ScenarioError:
        raise
    except VnetbenchError as exc:
        raise ScenarioError(str(exc)) from None
    try:
        if path.is_dir() and any(path.iterdir()):
            raise ScenarioError(f"--out {path}: is not empty; {hint} (a run is never written "
                                "among other files)")
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ScenarioError(f"--out {path}: cannot create it: {exc.strerror}") from None
    if not os.access(path, os.W_OK):
        raise ScenarioError(f"--out {path}: not writable")
    _own(path)
    _claim(path, hint)
    return path


CLAIM = ".claimed"
"""Made exclusively in a run's directory as soon as it is chosen: two runs started on one
empty ``--out`` at the same moment both find it empty, and only one can make this file."""


def _claim(path: Path, hint: str) -> None:
    """Claim ``path`` for this run alone (``CLAIM``, created exclusively, never through a
    link); ScenarioError when another run claimed it first."""
    try:
        fd = os.open(path / CLAIM, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        raise ScenarioError(f"--out {path}: another run claimed it a moment ago; {hint}"
                            ) from None
    except OSError as exc:
        raise ScenarioError(f"--out {path}: cannot claim it: {exc.strerror}") from None
    with os.fdopen(fd, "w") as f:
        f.write(f"{os.getpid()}\n")


def release_claim(path: Path) -> None:
    """Remove the claim once the run has ended (its own files mark the directory as taken;
    a run refused before writing any leaves the directory as empty as it found it)."""
    with contextlib.suppress(FileNotFoundError):
        (path / CLAIM).unlink()


def _own(path: Path) -> None:
    """As root, refuse a directory another user owns (they could plant links in it that root
    would write through): it must be root's or the invoking user's (``SUDO_UID``)."""
    if os.geteuid() != 0:
        return
    st = os.lstat(path)
    if st.st_uid not in trusted_owners():
        raise ScenarioError(f"--out {path}: belongs to uid {st.st_uid}, not to root or to you; "
                            "give a directory of yours (another user's could hold links that "
                            "root would write through)")
