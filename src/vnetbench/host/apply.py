"""Applying a kernel plan (``vnetbench.lab.plan.Plan``) stage by stage: ip/tc batches, sysctls,
iptables, files, commands and the layers' daemons.

Every backend stands on the same underlay (switch and emulated hosts are namespaces), so
each applies its plan's kernel stages here before realising its nodes. Namespaces are made
by threads that write each one's early sysctls as soon as it exists. Within a stage,
sysctls are written from one thread, daemons start in order (each waits for readiness
before the next), ``ip``/``bridge`` batches go over netlink from a few threads
(``kernel.apply_batches``), and the rest run as processes on a small worker pool. Early
sysctls of namespaces made otherwise are written in the background and joined before the
"late sysctls" stage.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from vnetbench.errors import LabError, VnetbenchError
from vnetbench.host import kernel
from vnetbench.host.processes import ProcessTracker, wait_uninterrupted
from vnetbench.lab.plan import (
    Action,
    Command,
    Daemon,
    IpBatch,
    IptablesRestore,
    Plan,
    Sysctls,
    TcBatch,
    WriteFile,
)

READY_TIMEOUT = 15.0
PARALLEL = 8


@dataclass
class KernelApplier:
    """Carries out kernel plans for one run; keeps the sysctls it set and the daemons."""

    tracker: ProcessTracker
    work_dir: Path
    daemon_cgroup_procs: Callable[[], Sequence[Path]] = lambda: ()
    """The ``cgroup.procs`` files a daemon joins (asked when one starts)."""
    daemon_cpus: Callable[[str], tuple[int, ...] | None] = lambda netns: None
    """The CPUs a daemon in a namespace runs on (``None``: not pinned)."""
    sysctls: dict[str, dict[str, str]] = field(default_factory=dict)
    daemons: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def apply(self, plan: Plan, what: str) -> None:
        """Apply every stage of ``plan``; LabError naming ``what`` and the failing stage."""
        early: Future[dict[str, dict[str, str]]] | None = None
        created: set[str] = set()
        try:
            for stage in plan.stages:
                try:
                    if stage.title == "namespaces":
                        created = self.create_namespaces(stage.actions, plan)
                        if created:
                            continue
                    if stage.title == "early sysctls":
                        left = [a for a in stage.actions
                                if isinstance(a, Sysctls) and a.netns not in created]
                        if left:
                            early = kernel.submit_sysctls(left)
                        continue
                    if early is not None and stage.title == "late sysctls":
                        self.record_sysctls(early.result())
                        early = None
                    self.apply_stage(stage.actions)
                except VnetbenchError as exc:
                    raise LabError(f"building the {what} lab failed at stage "
                                   f"'{stage.title}': {exc}") from exc
        finally:
            if early is not None:  # teardown must not race the background writes
                self.record_sysctls(wait_uninterrupted(early))

    def create_namespaces(self, actions: Sequence[Action], plan: Plan) -> set[str]:
        """Create the namespaces of a ``netns add`` batch with their early sysctls written
        as each is made (``kernel.create_namespaces``); the names (empty: not such a stage,
        left to ``apply_stage``)."""
        names = kernel.created_namespaces(actions[0]) if len(actions) == 1 else None
        if names is None:
            return set()
        made = set(names)
        early = [a for s in plan.stages if s.title == "early sysctls" for a in s.actions
                 if isinstance(a, Sysctls) and a.netns in made]
        self.record_sysctls(kernel.create_namespaces(names, early))
        return made

    def record_sysctls(self, seen: dict[str, dict[str, str]]) -> None:
        for netns, values in seen.items():
            self.sysctls.setdefault(netns, {}).update(values)

    def apply_stage(self, actions: Sequence[Action]) -> None:
        sysctls = [a for a in actions if isinstance(a, Sysctls)]
        if sysctls:
            self.record_sysctls(kernel.apply_sysctls(sysctls))
        for daemon in (a for a in actions if isinstance(a, Daemon)):
            self.start_daemon(daemon)
        batches = [a for a in actions if isinstance(a, IpBatch | TcBatch)]
        rest: list[Action] = [a for a in actions
                              if not isinstance(a, Sysctls | Daemon | IpBatch | TcBatch)]
        rest += kernel.apply_batches(batches)  # over netlink; what it cannot do, below
        if len(rest) == 1:
            apply_action(rest[0])
        elif rest:
            with ThreadPoolExecutor(max_workers=min(PARALLEL, len(rest))) as pool:
                for future in [pool.submit(apply_action, a) for a in rest]:
                    future.result()

    def start_daemon(self, d: Daemon) -> None:
        """Start ``d`` and wait until it is ready (then run its follow-up lines)."""
        log = self.work_dir / f"{d.role.replace(' ', '-')}.log"
        proc = self.tracker.spawn(d.argv, netns=d.netns, log=log, env=dict(d.env),
                                  cgroup_procs=self.daemon_cgroup_procs(),
                                  cpus=self.daemon_cpus(d.netns), where=d.netns)
        self.daemons[d.role] = proc
        deadline = time.monotonic() + READY_TIMEOUT
        while not _daemon_ready(d, log):
            if proc.poll() is not None:
                raise LabError(f"{d.role} exited with {proc.returncode} before it was ready: "
                               f"{tail(log)}")
            if time.monotonic() > deadline:
                raise LabError(f"{d.role} not ready after {READY_TIMEOUT:.0f}s: {tail(log)}")
            time.sleep(0.005)
        if d.then:
            kernel.apply_batch(IpBatch(d.netns, d.then))
        for argv in d.then_cmds:
            kernel.run_in(d.netns, argv)


def apply_action(action: Action) -> None:
    """Carry out one action that is neither a sysctl nor a daemon."""
    if isinstance(action, IpBatch | TcBatch):
        kernel.run_batch_process(action)
    elif isinstance(action, IptablesRestore):
        kernel.apply_iptables(action)
    elif isinstance(action, Command):
        kernel.apply_command(action)
    elif isinstance(action, WriteFile):
        kernel.apply_file(action)
    else:  # pragma: no cover - exhaustive
        raise LabError(f"unknown action {action!r}")


def _daemon_ready(d: Daemon, log: Path) -> bool:
    if d.ready.startswith("path:"):
        return os.path.exists(d.ready[5:])
    if d.ready == "stdout":
        try:
            text = log.read_text(errors="replace")
        except FileNotFoundError:
            return False
        for line in text.splitlines():
            with suppress(ValueError):
                if json.loads(line).get("event") == "ready":
                    return True
        return False
    return True


def tail(path: Path, lines: int = 5) -> str:
    """The last ``lines`` lines of a log, joined with `` | `` (for one-line errors)."""
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except FileNotFoundError:
        return "(no output)"
