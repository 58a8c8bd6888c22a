"""A node realised as a network namespace and cgroups of this kernel (the netns backend's
nodes, and Docker's containers, whose namespaces the lab attaches under its own names).

Processes join the node's cgroups, are pinned to its CPUs and enter its namespace in the
child before exec (``netns.preexec``), so every workload runs unchanged and is stopped by PID.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vnetbench.errors import CommandError, LabError
from vnetbench.host.netns import close_preexec, preexec, read_in_netns
from vnetbench.host.node import Node
from vnetbench.host.processes import ProcessTracker, kill_group


@dataclass(eq=False)
class NamespaceNode(Node):
    """A node whose processes run in namespace ``netns`` and the node's cgroups."""

    tracker: ProcessTracker | None = field(default=None, repr=False)

    def _procs_files(self) -> tuple[Path, ...]:
        return self.cgroup.procs_files if self.cgroup else ()

    def _preexec(self) -> Callable[[], None]:
        return preexec(self.netns, self._procs_files(), self.cpus)

    def run(self, argv: Sequence[str], timeout: float = 60.0, check: bool = True,
            env: Mapping[str, str] | None = None,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        enter = self._preexec()
        try:
            proc = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env={**os.environ, **(env or {})}, preexec_fn=enter,
            )
        except FileNotFoundError as exc:
            raise LabError(f"{argv[0]}: not found (running in node {self.name})") from exc
        finally:
            close_preexec(enter)
        return communicate(proc, argv, timeout, check, input_text, f"node {self.name}")

    def spawn(self, argv: Sequence[str], log: Path | None = None,
              env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        if self.tracker is None:
            raise LabError(f"node {self.name} belongs to no lab: nothing would stop the process")
        return self.tracker.spawn(argv, netns=self.netns, log=log, env=env,
                                  cgroup_procs=self._procs_files(), cpus=self.cpus,
                                  where=f"node {self.name}")

    def proc_net(self, proto: str) -> dict[str, str]:
        tables = {}
        for table in (proto, f"{proto}6"):
            try:
                tables[table] = read_in_netns(self.netns, f"net/{table}")
            except FileNotFoundError:
                continue
        return tables


@dataclass(eq=False)
class HostNode(NamespaceNode):
    """An emulated host's own network stack as a node (``h<i>``): the native side of a
    mixed placement, as a study's "direct" host. Reached at its underlay address."""

    @property
    def name(self) -> str:
        return f"h{self.host}"


def communicate(proc: subprocess.Popen[str], argv: Sequence[str], timeout: float, check: bool,
                input_text: str | None, where: str) -> subprocess.CompletedProcess[str]:
    """Wait for ``proc`` (killed with its group at ``timeout`` or on interrupt); its result,
    CommandError on a non-zero exit when ``check``."""
    try:
        out, err = proc.communicate(input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise CommandError(argv, -9, f"timed out after {timeout:.0f}s; {err}", where) from None
    except BaseException:
        kill_group(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    result = subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
    if check and proc.returncode != 0:
        raise CommandError(argv, proc.returncode, err or out, where)
    return result
