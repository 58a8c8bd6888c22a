"""The processes of one run: started with their namespace, cgroups and CPUs, recorded by PID
in the run's state (so ``vnetbench clean`` finds them after a SIGKILL), and stopped by PID.

Every backend starts its long-lived processes here (workload servers, the layers' daemons,
Docker engines, QEMU), so teardown stops them all, newest first. Ctrl-C and SIGTERM are
held off while a process is started and recorded, so an interrupt can never leave an
untracked process behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TypeVar

from vnetbench.errors import LabError
from vnetbench.host.netns import close_preexec, preexec
from vnetbench.host.state import RunState
from vnetbench.signals import Terminated

T = TypeVar("T")
STOP_GRACE = 3.0
SIGNALS_DEFERRED = {signal.SIGINT, signal.SIGTERM}


def kill_group(pid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to the process group led by ``pid`` and to ``pid`` itself."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def wait_uninterrupted(future: Future[T]) -> T:
    """``future.result()``, finishing the wait if Ctrl-C arrives meanwhile (re-raised after)."""
    interrupted: BaseException | None = None
    while True:
        try:
            result = future.result()
            break
        except (KeyboardInterrupt, Terminated) as exc:
            interrupted = exc
    if interrupted is not None:
        raise interrupted
    return result


def _block_signals() -> bool:
    if threading.current_thread() is not threading.main_thread():
        return False
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS_DEFERRED)
    return True


def _unblock_signals(blocked: bool) -> None:
    if blocked:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS_DEFERRED)


@dataclass
class ProcessTracker:
    """Starts, records and stops the run's long-lived processes."""

    state: RunState
    placement_misses: list[str] = field(default_factory=list)
    """Processes whose CPU affinity did not come out as asked (empty: placement held)."""
    _procs: list[tuple[subprocess.Popen[bytes], IO[bytes] | None]] = field(default_factory=list)

    def spawn(self, argv: Sequence[str], *, netns: str | None = None, log: Path | None = None,
              env: Mapping[str, str] | None = None, cgroup_procs: Sequence[Path] = (),
              cpus: Sequence[int] | None = None, where: str = "",
              stdin_pipe: bool = False) -> subprocess.Popen[bytes]:
        """Start ``argv`` (in ``netns``, the cgroups of ``cgroup_procs``, on ``cpus``; its
        output to ``log``) in a session of its own, and record it. ``stdin_pipe``: its stdin
        is a pipe this process holds (closed when the process is stopped, or when this one
        dies), for a program that stops what it started once its stdin closes."""
        handle = open(log, "wb") if log else None  # noqa: SIM115 - closed at stop
        enter = preexec(netns, cgroup_procs, cpus)
        blocked = _block_signals()
        try:
            proc = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
                stdout=handle or subprocess.DEVNULL, stderr=subprocess.STDOUT if handle else
                subprocess.DEVNULL, env={**os.environ, **(env or {})}, preexec_fn=enter,
            )
        except FileNotFoundError as exc:
            if handle:
                handle.close()
            _unblock_signals(blocked)
            raise LabError(f"{argv[0]}: not found (starting it in {where or netns or 'the host'})"
                           ) from exc
        except BaseException:
            if handle:
                handle.close()
            _unblock_signals(blocked)
            raise
        finally:
            close_preexec(enter)
        try:
            self._procs.append((proc, handle))
            self.state.add_process(proc.pid)
        finally:
            _unblock_signals(blocked)
        if cpus:
            self._check_affinity(proc.pid, argv[0], cpus)
        return proc

    def _check_affinity(self, pid: int, what: str, cpus: Sequence[int]) -> None:
        try:
            got = os.sched_getaffinity(pid)
        except OSError:
            return  # already gone: nothing to check
        if got != set(cpus):
            self.placement_misses.append(f"{Path(what).name} (pid {pid}) on CPUs "
                                         f"{sorted(got)}, placed on {sorted(cpus)}")

    def stop(self, proc: subprocess.Popen[bytes], grace: float = STOP_GRACE) -> int | None:
        """Stop a process (SIGTERM to its group, then SIGKILL after ``grace``); forget it."""
        if proc.poll() is None:
            kill_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                kill_group(proc.pid, signal.SIGKILL)
                proc.wait()
        if proc.stdin is not None:
            proc.stdin.close()
        for entry in list(self._procs):
            if entry[0] is proc:
                if entry[1]:
                    entry[1].close()
                self._procs.remove(entry)
        return proc.returncode

    def stop_all(self, which: Callable[[subprocess.Popen[bytes]], bool] = lambda p: True
                 ) -> list[str]:
        """Stop the tracked processes ``which`` selects, newest first; problems met."""
        problems = []
        for proc, _ in reversed(list(self._procs)):
            if not which(proc):
                continue
            try:
                self.stop(proc)
            except Exception as exc:
                problems.append(f"stopping pid {proc.pid}: {exc}")
        return problems
