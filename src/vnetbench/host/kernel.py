"""Applying a plan's actions to the kernel, in batches, without one process per command.

``ip``/``bridge`` batches go over netlink from a few threads that move from namespace to
namespace (``iplines``: the planners' lines as netlink requests), and namespaces are created
by such threads (``netns.create_netns``); a batch with a line outside that grammar, and every
``tc`` batch, runs as one ``-batch`` process in its namespace. Sysctls are written from a
thread that joined the namespace; ``iptables-restore`` and one-off commands are started from
such a thread (they inherit its namespace). Each call returns only once the kernel has
acknowledged the change (netlink is synchronous), so no sleeps are needed.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from functools import partial
from pathlib import Path

from vnetbench.errors import CommandError, LabError
from vnetbench.host.iplines import compile_batch, run_ops
from vnetbench.host.netns import (
    create_netns,
    enter_netns,
    in_netns,
    share_netns_dir,
    submit_in_thread,
)
from vnetbench.lab.plan import Action, Command, IpBatch, IptablesRestore, Sysctls, TcBatch, WriteFile

OPTIONAL_SYSCTL_PREFIXES = ("net.bridge.",)
"""Keys that exist only when the kernel has the feature (br_netfilter); absent -> recorded."""

COMMAND_TIMEOUT = 60.0
NETLINK_THREADS = 2
"""Threads configuring namespaces over netlink (most link changes serialise on the kernel's
RTNL lock, so more threads than cores only add switching)."""


def run_checked(argv: Sequence[str], *, input_text: str | None = None, where: str = "",
                timeout: float = COMMAND_TIMEOUT) -> str:
    try:
        proc = subprocess.run(list(argv), input=input_text, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise LabError(f"{argv[0]} is not installed (needed {where or 'by the lab'})") from exc
    except subprocess.TimeoutExpired as exc:
        raise CommandError(argv, -1, f"timed out after {timeout:.0f}s", where) from exc
    if proc.returncode != 0:
        raise CommandError(argv, proc.returncode, proc.stderr or proc.stdout, where)
    return proc.stdout


def apply_batch(action: IpBatch | TcBatch) -> None:
    """Carry out one batch (over netlink when every line allows it)."""
    if not apply_batches([action]):
        return
    run_batch_process(action)


def apply_batches(actions: Sequence[IpBatch | TcBatch]) -> list[IpBatch | TcBatch]:
    """Carry out the batches netlink can do (namespace creation and the lines ``iplines``
    understands), spread over ``NETLINK_THREADS`` threads; the batches left for a process.
    LabError naming the namespace and line the kernel refused."""
    creates: list[str] = []
    jobs: list[tuple[str, Callable[[], None]]] = []
    rest: list[IpBatch | TcBatch] = []
    for action in actions:
        names = created_namespaces(action)
        ops = (compile_batch(action.tool, action.lines)
               if isinstance(action, IpBatch) and action.netns else None)
        if names is not None:
            creates += names
        elif ops is not None and action.netns is not None:
            jobs.append((action.netns, partial(run_ops, ops)))
        else:
            rest.append(action)
    if creates:
        create_namespaces(creates)
    if jobs:
        _on_threads(jobs, enter=True, what="namespace")
    return rest


def create_namespaces(names: Sequence[str],
                      sysctls: Sequence[Sysctls] = ()) -> dict[str, dict[str, str]]:
    """Create namespaces ``names`` from a few threads; each thread, still inside the namespace
    it has just made, writes that namespace's ``sysctls`` at once: before any link change
    holds the RTNL lock, which some keys (forwarding, disable_ipv6) must take, and before
    the first interface arrives. What each key reads back, per namespace."""
    share_netns_dir()
    wanted = {a.netns: a for a in sysctls}
    seen: dict[str, dict[str, str]] = {}

    def make(name: str) -> None:
        create_netns(name)
        if name in wanted:
            seen[name] = _write_sysctls(wanted[name])

    _on_threads([(name, partial(make, name)) for name in names],
                enter=False, what="creating namespace")
    return seen


def created_namespaces(action: Action) -> list[str] | None:
    """The namespaces a root batch of ``netns add`` lines only creates (else None: another
    batch or another action)."""
    if not isinstance(action, IpBatch) or action.netns is not None or action.tool != "ip":
        return None
    words = [line.split() for line in action.lines]
    if not words or any(len(w) != 3 or w[:2] != ["netns", "add"] for w in words):
        return None
    return [w[2] for w in words]


def _on_threads(jobs: Sequence[tuple[str, Callable[[], None]]], *, enter: bool,
                what: str) -> None:
    """Run ``jobs`` (namespace, work) on fresh threads, each taking every n-th job (and,
    with ``enter``, joining the job's namespace first); LabError for the first failure,
    after which no thread starts another job."""
    failed: list[LabError] = []
    lock = threading.Lock()

    def worker(share: Sequence[tuple[str, Callable[[], None]]]) -> None:
        for netns, work in share:
            if failed:
                return
            try:
                if enter:
                    enter_netns(netns)
                work()
            except OSError as exc:
                with lock:
                    failed.append(LabError(f"{what} {netns}: {exc.strerror or exc}"))
                return
            except LabError as exc:
                with lock:
                    failed.append(exc)
                return

    count = min(NETLINK_THREADS, len(jobs))
    futures = [submit_in_thread(partial(worker, jobs[k::count])) for k in range(count)]
    for future in futures:
        future.result()
    if failed:
        raise failed[0]


def run_batch_process(action: IpBatch | TcBatch) -> None:
    """``ip``/``bridge``/``tc`` ``-batch`` as one process inside the batch's namespace."""
    tool = "tc" if isinstance(action, TcBatch) else action.tool
    argv = [tool]
    if action.netns:
        argv += ["-n", action.netns]
    argv += ["-batch", "-"]
    run_checked(argv, input_text="\n".join(action.lines) + "\n",
                where=f"namespace {action.netns or 'root'}")


def sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def apply_sysctls(actions: Sequence[Sysctls]) -> dict[str, dict[str, str]]:
    """Write every action's keys inside its namespace; see ``submit_sysctls``."""
    return submit_sysctls(actions).result()


def submit_sysctls(actions: Sequence[Sysctls]) -> Future[dict[str, dict[str, str]]]:
    """Start writing every action's keys inside its namespace, all from one thread that
    moves from namespace to namespace (far cheaper than a thread per namespace); the future
    gives, per namespace, what each key reads back (or 'absent' for a missing feature)."""

    def write_all() -> dict[str, dict[str, str]]:
        seen: dict[str, dict[str, str]] = {}
        for action in actions:
            enter_netns(action.netns)
            seen[action.netns] = _write_sysctls(action)
        return seen

    return submit_in_thread(write_all)


def _write_sysctls(action: Sysctls) -> dict[str, str]:
    """Set each key inside the calling thread's namespace (written only when it differs:
    some writes take the RTNL lock); what each reads back ('absent' for an optional feature
    this kernel lacks). Paths are opened relative to one ``/proc/sys/net`` directory: the
    kernel finds that directory by a walk through every namespace's ``net`` entry, which
    with a thousand namespaces costs more than the writes themselves."""
    seen: dict[str, str] = {}
    net = os.open("/proc/sys/net", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for key, value in action.values:
            try:
                seen[key] = _set_key(net, key, value)
            except FileNotFoundError:
                if key.startswith(OPTIONAL_SYSCTL_PREFIXES):
                    seen[key] = "absent"
                    continue
                raise LabError(f"cannot set {key}={value} in {action.netns}: no such key") \
                    from None
            except OSError as exc:
                raise LabError(f"cannot set {key}={value} in {action.netns}: {exc}") from exc
    finally:
        os.close(net)
    return seen


def _set_key(net_dir: int, key: str, value: str) -> str:
    """Write ``key`` if it differs from ``value``; what it reads back."""
    if key.startswith("net."):
        fd = os.open(key[4:].replace(".", "/"), os.O_RDWR | os.O_CLOEXEC, dir_fd=net_dir)
    else:
        fd = os.open(sysctl_path(key), os.O_RDWR | os.O_CLOEXEC)
    try:
        current = os.read(fd, 4096).decode().strip()
        if current != value:
            os.pwrite(fd, value.encode(), 0)
            current = os.pread(fd, 4096, 0).decode().strip()
        return current
    finally:
        os.close(fd)


def apply_iptables(action: IptablesRestore) -> None:
    in_netns(action.netns, lambda: run_checked(
        ["iptables-restore"], input_text=action.rules, where=f"namespace {action.netns}"))


def run_in(netns: str | None, argv: Sequence[str], *, input_text: str | None = None) -> str:
    """Run one command inside ``netns`` (a thread joins it; the child inherits it)."""
    return in_netns(netns, lambda: run_checked(argv, input_text=input_text,
                                               where=f"namespace {netns or 'root'}"))


def apply_command(action: Command) -> None:
    run_in(action.netns, action.argv)


def apply_file(action: WriteFile) -> None:
    path = Path(action.path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600 if action.secret else 0o644)
    path.write_text(action.content)


def which_or_raise(name: str, install_hint: str) -> str:
    import shutil

    from vnetbench.errors import MissingToolError

    path = shutil.which(name)
    if not path:
        raise MissingToolError(f"{name} is not installed: {install_hint}")
    return path
