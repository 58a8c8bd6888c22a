"""Paths a user names (``--out``, an export's or a report's file, a run directory's files):
what vnetbench may write, replace or read there. One rule for all of them:

* a file vnetbench writes or replaces is a regular file or a new name: never a device node,
  a FIFO, a socket, a directory or a symbolic link (as root, ``--out /dev/null`` would
  otherwise replace the system's /dev/null, ``--out /dev/stdout`` its link), and never on a
  kernel filesystem (/proc, /sys, /dev);
* a file vnetbench reads as data (a run's samples) is a regular file (a link to one is
  followed): never a FIFO that blocks, nor a device that never ends;
* a path the kernel cannot look up (a symlink loop, a component longer than the
  filesystem allows, a component that is not a directory) is said so.

Every refusal is a ``VnetbenchError`` of one line (the CLI prints it and exits 2). A file is
written to a fresh temporary file beside the target (created exclusively, so a name planted
there is never followed) and renamed over the target once complete, after the target has
been checked again.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from vnetbench.errors import VnetbenchError

KERNEL_FS = (Path("/proc"), Path("/sys"), Path("/dev"))
"""Kernel filesystems: nothing vnetbench writes belongs there."""
WRITE_HINT = "give a regular file or a new name"


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, as a message says it (``a FIFO``, ``a directory``...)."""
    for test, kind in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISLNK, "a symbolic link"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "a special file"


def _blocking_parent(path: Path) -> Path | None:
    """The first parent of ``path`` that exists and is not a directory (following links)."""
    for parent in reversed(path.parents):
        try:
            if not stat.S_ISDIR(os.stat(parent).st_mode):
                return parent
        except OSError:
            return None
    return None


def _reason(exc: OSError, path: Path) -> str:
    """Why the kernel could not look ``path`` up, in words (one line)."""
    if exc.errno == errno.ELOOP:
        return "too many levels of symbolic links (a symlink loop); give a real path"
    if exc.errno == errno.ENAMETOOLONG:
        longest = max(path.parts, key=lambda p: len(os.fsencode(p)), default="")
        size = len(os.fsencode(longest))
        if size > 255:
            return (f"a component of it is {size} bytes long, more than a file name may be "
                    "(255); give a shorter name")
        return "the path is longer than the system allows; give a shorter one"
    if exc.errno == errno.ENOTDIR:
        blocked = _blocking_parent(path)
        return f"{blocked} is not a directory" if blocked else "a component is not a directory"
    return exc.strerror or str(exc)


def lookup(path: Path, what: str, *, follow: bool = False) -> os.stat_result | None:
    """``lstat`` of ``path`` (``stat`` when ``follow``), None when it does not exist; a
    one-line VnetbenchError when the kernel cannot look it up (loop, name too long...)."""
    try:
        return os.stat(path) if follow else os.lstat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # ValueError: an embedded NUL byte
        reason = _reason(exc, path) if isinstance(exc, OSError) else "not a valid path"
        raise VnetbenchError(f"{what} {path}: {reason}") from None


def _named(path: str | os.PathLike[str], what: str, hint: str) -> Path:
    if not os.fspath(path).strip():
        raise VnetbenchError(f"{what}: empty path; {hint}")
    return Path(path)


def _outside_kernel_fs(path: Path, what: str, hint: str) -> None:
    where = Path(os.path.realpath(path))
    for kernel_fs in KERNEL_FS:
        if where == kernel_fs or kernel_fs in where.parents:
            raise VnetbenchError(f"{what} {path}: {kernel_fs} is a kernel filesystem; {hint} "
                                 "on disk")


def output_file(path: str | os.PathLike[str], what: str, hint: str = WRITE_HINT) -> Path:
    """``path`` checked as a file vnetbench may write: a new name or a regular file (not a
    link, device, FIFO, socket or directory), not on a kernel filesystem, every parent a
    directory or absent; else a one-line VnetbenchError ``<what> <path>: ...; <hint>``."""
    target = _named(path, what, hint)
    found = lookup(target, what)
    if found is None:
        blocked = _blocking_parent(target)
        if blocked is not None:
            raise VnetbenchError(f"{what} {target}: {blocked} is not a directory")
    elif not stat.S_ISREG(found.st_mode):
        kind = kind_of(found.st_mode)
        if stat.S_ISLNK(found.st_mode):
            with suppress(OSError):
                kind += f" (to {os.readlink(target)})"
        raise VnetbenchError(f"{what} {target}: it is {kind}, not a regular file; {hint} "
                             "(vnetbench never writes over a device, a pipe, a link or a "
                             "directory)")
    _outside_kernel_fs(target, what, hint)
    return target


def output_dir(path: str | os.PathLike[str], what: str, hint: str) -> Path:
    """``path`` checked as a directory vnetbench may create or write into: a new name or a
    directory (a link to one is followed), not on a kernel filesystem; else one line."""
    target = _named(path, what, hint)
    found = lookup(target, what, follow=True)
    if found is None:
        if target.is_symlink():
            raise VnetbenchError(f"{what} {target}: it is a symbolic link to "
                                 f"{os.readlink(target)}, which does not exist; {hint}")
        blocked = _blocking_parent(target)
        if blocked is not None:
            raise VnetbenchError(f"{what} {target}: {blocked} is not a directory")
    elif not stat.S_ISDIR(found.st_mode):
        raise VnetbenchError(f"{what} {target}: it is {kind_of(found.st_mode)}; {hint}")
    _outside_kernel_fs(target, what, hint)
    return target


def input_file(path: str | os.PathLike[str], what: str) -> Path | None:
    """``path`` checked as a data file to read: None when it does not exist, the path when
    it is a regular file (a link to one is followed), else a one-line VnetbenchError (a
    FIFO would block the read, a device such as /dev/zero never ends)."""
    source = Path(path)
    found = lookup(source, what, follow=True)
    if found is None:
        return None
    if not stat.S_ISREG(found.st_mode):
        shown = f"{source} (-> {os.path.realpath(source)})" if source.is_symlink() else source
        raise VnetbenchError(f"{what} {shown}: it is {kind_of(found.st_mode)}, not a file")
    return source


def _umask() -> int:
    """This process's umask, read without changing it (Linux 4.7+ shows it in status)."""
    with suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def replace_file(path: str | os.PathLike[str], what: str, write: Callable[[Path], object],
                 hint: str = WRITE_HINT) -> Path:
    """Write a file at ``path`` (checked by ``output_file``) through ``write(temp)``: the
    temporary file is made exclusively beside the target, synced to disk and renamed over
    it when complete (the target checked again just before; the directory synced after),
    removed on any failure. A failure of the
    filesystem (full, read-only, no permission) is a one-line VnetbenchError."""
    target = output_file(path, what, hint)
    tmp: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:64]}.",
                                    suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
        os.chmod(tmp, 0o666 & ~_umask())  # as an ordinary new file (mkstemp makes it 0600)
        write(tmp)
        _sync(tmp, os.O_RDONLY | os.O_NOFOLLOW)  # the content on disk before the name
        output_file(target, what, hint)
        os.replace(tmp, target)
        tmp = None
        _sync(target.parent, os.O_RDONLY | os.O_DIRECTORY)  # and the new name itself
    except OSError as exc:
        where = str(exc.filename) if exc.filename is not None else ""
        detail = f" ({where})" if where and where not in (str(target), str(tmp)) else ""
        raise VnetbenchError(f"{what} {target}: cannot write it: {exc.strerror or exc}"
                             f"{detail}") from exc
    finally:
        if tmp is not None:
            with suppress(OSError):
                tmp.unlink()
    return target


def _sync(path: Path, flags: int) -> None:
    """fsync ``path`` (a file, or a directory after a rename in it), so a crash right after
    leaves the old file or the new one, never an empty one under the new name."""
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def trusted_owners() -> set[int]:
    """Whose files root may write in: root's, this process's, and the user's who ran
    ``sudo`` (``SUDO_UID``)."""
    owners = {0, os.geteuid()}
    sudo = os.environ.get("SUDO_UID", "")
    if sudo.isdigit():
        owners.add(int(sudo))
    return owners


def trusted_dir(path: Path, what: str, mode: int = 0o700) -> Path:
    """``path`` as a directory root may write in: made now (``mode``) when absent; else it
    must be a real directory (not a link), owned by root or by the invoking user
    (``SUDO_UID``), and writable by nobody else. A directory another local user made first
    (in /var/tmp anyone can) would let them plant links and files that root then writes
    through or runs: refused in one line saying what to fix, before anything is written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with suppress(FileExistsError):
            path.mkdir(mode=mode)
        st = os.lstat(path)
    except OSError as exc:
        raise VnetbenchError(f"{what} {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise VnetbenchError(f"{what} {path} is not a directory (a link or a file someone put "
                             f"there): remove it and run again")
    if st.st_uid not in trusted_owners():
        raise VnetbenchError(f"{what} {path} belongs to uid {st.st_uid}, not to root: another "
                             "user may have planted files in it; remove it (rm -rf "
                             f"{path}) and run again")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise VnetbenchError(f"{what} {path} is writable by other users (mode "
                             f"{stat.S_IMODE(st.st_mode):o}): remove it (rm -rf {path}) or "
                             f"`chmod go-w {path}` after checking what is in it, and run again")
    return path
