"""Applying a plan's actions to the kernel, in batches, without one process per command.

``ip``/``bridge``/``tc`` actions run as one ``-batch`` process per namespace; sysctls are
written from a thread that joined the namespace; ``iptables-restore`` and one-off commands
are started from such a thread (they inherit its namespace). Each call returns only once
the kernel has acknowledged the change (netlink is synchronous), so no sleeps are needed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path

from vnetbench.errors import CommandError, LabError
from vnetbench.netns import enter_netns, in_netns, submit_in_thread
from vnetbench.plan import Command, IpBatch, IptablesRestore, Sysctls, TcBatch, WriteFile

OPTIONAL_SYSCTL_PREFIXES = ("net.bridge.",)
"""Keys that exist only when the kernel has the feature (br_netfilter); absent -> recorded."""

COMMAND_TIMEOUT = 60.0


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
    seen: dict[str, str] = {}
    for key, value in action.values:
        path = sysctl_path(key)
        if not path.exists() and key.startswith(OPTIONAL_SYSCTL_PREFIXES):
            seen[key] = "absent"
            continue
        try:
            path.write_text(value)
            seen[key] = path.read_text().strip()
        except OSError as exc:
            raise LabError(f"cannot set {key}={value} in {action.netns}: {exc}") from exc
    return seen


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
