"""Entering network namespaces without forking helpers.

``setns(2)`` changes only the calling thread, so work "inside" a namespace runs on a thread
of its own that joins the namespace, does file I/O there (``/proc/thread-self/net/*`` and
``/proc/sys/net/*`` show that thread's namespace) or starts subprocesses (which inherit the
thread's namespace), and ends. Processes that must also join cgroups use ``preexec`` below.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TypeVar

NETNS_DIR = Path("/run/netns")
CLONE_NEWNET = 0x40000000
MS_BIND, MS_REC, MS_SHARED = 0x1000, 0x4000, 0x100000
MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)

T = TypeVar("T")


def setns(fd: int, nstype: int = CLONE_NEWNET) -> None:
    if _libc.setns(fd, nstype) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns failed: {os.strerror(err)}")


def netns_path(name: str) -> Path:
    return NETNS_DIR / name


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def share_netns_dir() -> None:
    """Make ``/run/netns`` a shared mount point (as ``ip netns add`` does), so the namespaces
    mounted there show in other mount namespaces too."""
    NETNS_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    target = str(NETNS_DIR).encode()
    if _libc.mount(b"", target, b"none", MS_SHARED | MS_REC, None) == 0:
        return
    if ctypes.get_errno() != errno.EINVAL:  # EINVAL: not a mount point yet
        _check(-1, f"making {NETNS_DIR} shared")
    _check(_libc.mount(target, target, b"none", MS_BIND | MS_REC, None), f"mounting {NETNS_DIR}")
    _check(_libc.mount(b"", target, b"none", MS_SHARED | MS_REC, None),
           f"making {NETNS_DIR} shared")


def create_netns(name: str) -> None:
    """Create namespace ``name`` (``ip netns add`` without the process): the calling thread
    moves into a new network namespace, which is bind-mounted at ``/run/netns/<name>``.
    The thread stays in it (use a thread of its own). Call ``share_netns_dir`` first."""
    path = netns_path(name)
    os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0))
    try:
        _check(_libc.unshare(CLONE_NEWNET), f"creating namespace {name}")
        _check(_libc.mount(b"/proc/thread-self/ns/net", str(path).encode(), b"none", MS_BIND,
                           None), f"mounting namespace {name}")
    except OSError:
        path.unlink()
        raise


def delete_netns(name: str) -> None:
    """Delete namespace ``name`` (``ip netns del`` without the process): detach its bind
    mount and remove ``/run/netns/<name>``. The kernel frees the namespace, with every link,
    route and rule in it, once nothing else holds it (a process inside, an open fd).
    FileNotFoundError when there is no such namespace."""
    path = netns_path(name)
    _libc.umount2(str(path).encode(), MNT_DETACH)  # not mounted (a half-made one): unlink
    path.unlink()


def in_netns(name: str | None, fn: Callable[[], T]) -> T:
    """Run ``fn`` on a fresh thread inside namespace ``name`` (None: this process's own)."""
    if name is None:
        return fn()
    return submit_in_netns(name, fn).result()


def enter_netns(name: str) -> None:
    """Move the calling thread into namespace ``name``."""
    fd = os.open(netns_path(name), os.O_RDONLY | os.O_CLOEXEC)
    try:
        setns(fd)
    finally:
        os.close(fd)


def submit_in_thread(fn: Callable[[], T]) -> Future[T]:
    """Run ``fn`` on a fresh thread (which may join namespaces without affecting others)."""
    future: Future[T] = Future()

    def body() -> None:
        try:
            future.set_result(fn())
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=body, daemon=True).start()
    return future


def submit_in_netns(name: str, fn: Callable[[], T]) -> Future[T]:
    """Start ``fn`` on a fresh thread inside namespace ``name``; its future."""

    def inside() -> T:
        enter_netns(name)
        return fn()

    return submit_in_thread(inside)


def read_in_netns(name: str | None, relpath: str) -> str:
    """Text of ``/proc/thread-self/<relpath>`` as seen inside namespace ``name``.

    ``relpath`` is e.g. ``net/dev``, ``net/snmp``; a path starting with ``/`` is read as is
    (for files that do not depend on the namespace, such as ``/proc/stat``).
    """
    def read() -> str:
        path = relpath if relpath.startswith("/") else f"/proc/thread-self/{relpath}"
        return Path(path).read_text()

    return in_netns(name, read)


def preexec(netns: str | None, cgroup_procs: Sequence[Path] = (),
            cpus: Sequence[int] | None = None) -> Callable[[], None]:
    """A ``preexec_fn`` that joins cgroups first, pins to ``cpus`` (when given), then enters
    the namespace (in the child)."""
    fd = os.open(netns_path(netns), os.O_RDONLY) if netns else -1

    def enter() -> None:
        # the parent may hold SIGINT/SIGTERM blocked while it starts us: a child must not
        # inherit that mask, or it could never be stopped
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        pid = str(os.getpid())
        for procs in cgroup_procs:
            with open(procs, "w") as f:
                f.write(pid)
        if cpus:
            os.sched_setaffinity(0, cpus)
        if fd >= 0:
            setns(fd)
        os.setsid()

    enter.fd = fd  # type: ignore[attr-defined]
    return enter


def close_preexec(fn: Callable[[], None]) -> None:
    fd = getattr(fn, "fd", -1)
    if fd >= 0:
        os.close(fd)


def netns_inode(name: str) -> int | None:
    """Inode identifying namespace ``name`` (to find processes inside it), or None."""
    try:
        return os.stat(netns_path(name)).st_ino
    except FileNotFoundError:
        return None


def pids_in_netns(inodes: set[int]) -> list[int]:
    """PIDs of every process whose network namespace is one of ``inodes``."""
    found = []
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if os.stat(f"/proc/{entry.name}/ns/net").st_ino in inodes:
                found.append(int(entry.name))
        except (FileNotFoundError, PermissionError, ProcessLookupError):
            continue
    return found
