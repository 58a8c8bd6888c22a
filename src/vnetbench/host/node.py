"""The backend-neutral handle of a lab node: what workloads use to run commands inside it.

A node has an index, the emulated host it sits on, the address its peers reach it at and the
interface that address is on. ``run`` waits for a command, ``spawn`` starts a long-lived one
(stopped by the run at teardown), ``wait_listening`` waits for a server's socket. Backends
subclass it: ``backends.netns.node.NamespaceNode`` (a namespace and cgroups on this kernel:
the netns and Docker backends) and ``backends.vm.node.GuestNode`` (a QEMU guest).

``netns`` is the network namespace on this host in which the node's interfaces and sockets
can be read (the collectors and some workloads read them there); ``None`` when the node's
network stack is not on this kernel (a virtual machine).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, TypeVar

from vnetbench.errors import LabError, WorkloadError
from vnetbench.host.cgroups import NodeCgroup
from vnetbench.host.netns import in_netns, netns_inode, pids_in_netns

T = TypeVar("T")

BUSY_LOOP = """
import sys, time
duty, end = float(sys.argv[1]), time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    t = time.monotonic()
    while time.monotonic() - t < 0.01 * duty:
        pass
    if duty < 1.0:
        time.sleep(0.01 * (1.0 - duty))
"""


@dataclass(eq=False)
class Node(ABC):
    """A node of the lab (see the module docstring)."""

    index: int
    host: int
    netns: str | None
    ip: str
    ifname: str
    cgroup: NodeCgroup | None = None
    cpus: tuple[int, ...] | None = None
    """CPUs the node's processes are pinned to (``None``: not pinned); see ``placement``."""

    @property
    def name(self) -> str:
        return f"n{self.index}"

    def work_dir(self, lab_dir: Path) -> Path:
        """Where a workload keeps this node's files (the lab's work directory, when the node
        is on this host)."""
        return lab_dir

    def check_files(self, needed_by: str) -> None:
        """WorkloadError when a workload cannot keep files for this node (``write_file``...)."""
        self.namespace(needed_by)

    def write_file(self, path: Path, text: str) -> None:
        """Write a file the node's processes read (on the node's machine)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def read_file(self, path: Path) -> str:
        """A file the node's processes wrote; FileNotFoundError when there is none."""
        return path.read_text(errors="replace")

    def cat_file(self, path: Path, timeout: float, where: str) -> str:
        """``read_file`` of a node whose files are not on this machine (a pod, a guest):
        ``cat`` run in the node; FileNotFoundError saying ``path`` and ``where`` when the
        file cannot be read."""
        got = self.run(["cat", str(path)], check=False, timeout=timeout)
        if got.returncode != 0:
            raise FileNotFoundError(f"{path} {where}")
        return got.stdout

    def remove_dir(self, path: Path) -> None:
        """Remove a directory of the node's files (nothing when it is not there)."""
        shutil.rmtree(path, ignore_errors=True)

    def namespace(self, needed_by: str) -> str:
        """The node's namespace on this host; WorkloadError when it has none (a guest)."""
        if self.netns is None:
            raise WorkloadError(f"{needed_by} needs nodes whose network stack is on this host; "
                                f"node {self.name} is a virtual machine (use a namespace or "
                                "Docker layer for it)")
        return self.netns

    @abstractmethod
    def run(self, argv: Sequence[str], timeout: float = 60.0, check: bool = True,
            env: Mapping[str, str] | None = None,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside the node and wait (killed at ``timeout``); CommandError on a
        non-zero exit when ``check``."""

    @abstractmethod
    def spawn(self, argv: Sequence[str], log: Path | None = None,
              env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start a long-lived process inside the node; the run stops it at teardown."""

    shares_host_files: ClassVar[bool] = True
    """Whether the node's processes see this host's files at their paths (programs, Java,
    the vnetbench package), read-only at least: namespace nodes and VM guests (the host's
    root over 9p) do; a machine over SSH and a pod do not."""

    listen_poll_s: ClassVar[float] = 0.01
    """Seconds between looks at the node's sockets while waiting for a server."""

    look_timeout_s: ClassVar[float] = 10.0
    """Seconds a look inside the node (a ``cat`` of its /proc) may take."""

    def proc_net(self, proto: str) -> dict[str, str]:
        """The node's ``/proc/net/<proto>`` and ``<proto>6`` texts, by table name (a table
        the node lacks is left out); read by running ``cat`` inside the node, unless a
        subclass reads them more directly."""
        tables = {}
        for table in (proto, f"{proto}6"):
            got = self.run(["cat", f"/proc/net/{table}"], timeout=self.look_timeout_s,
                           check=False)
            if got.returncode == 0:
                tables[table] = got.stdout
        return tables

    def wait_listening(self, port: int, proto: str = "tcp", timeout: float = 10.0) -> None:
        """Return once a socket listens on ``port`` inside the node, else LabError."""
        deadline = time.monotonic() + timeout
        while True:
            if listening_in(self.proc_net(proto), port, proto):
                return
            if time.monotonic() > deadline:
                raise LabError(f"nothing listens on {proto} port {port} in node {self.name} "
                               f"after {timeout:.0f}s")
            time.sleep(self.listen_poll_s)

    def program_path(self, local: str) -> str:
        """The path by which the node runs a program of this host (``local``): the same
        path where the node sees this host's files."""
        return local

    def launch_agent(self) -> str | None:
        """An ssh-like command in the node that runs a command in another node of the lab:
        ``AGENT --map FILE NAME COMMAND...``, ``FILE`` holding lines ``ADDRESS NAME`` and
        ``NAME`` a node's ``launch_name`` (MPI's launcher); None when the backend gives the
        node none (nodes on this host: a workload joins their namespaces itself)."""
        return None

    def launch_name(self) -> str:
        """The name ``launch_agent`` reaches this node by."""
        return self.name

    def call(self, fn: Callable[[], T], needed_by: str) -> T:
        """``fn()`` run in a thread inside the node's network namespace on this host (a
        socket it opens belongs to the node); WorkloadError when the node has none."""
        return in_netns(self.namespace(needed_by), fn)

    def start_busy(self, duty: float = 1.0, bound_s: float = 3600.0) -> subprocess.Popen[bytes]:
        """A CPU-bound neighbour inside the node (spins ``duty`` of each 10 ms)."""
        return self.spawn([sys.executable, "-c", BUSY_LOOP, str(duty), str(bound_s)])


def listening_in(proc_net: Mapping[str, str], port: int, proto: str) -> bool:
    """Whether the ``/proc/net/{tcp,tcp6,udp,udp6}`` texts (by table name) show a socket
    listening (TCP) or bound (UDP) on ``port``."""
    hexport = f"{port:04X}"
    for table in (proto, f"{proto}6"):
        for line in proc_net.get(table, "").splitlines()[1:]:
            fields = line.split()
            if len(fields) > 3 and fields[1].endswith(":" + hexport) and (
                    proto == "udp" or fields[3] == "0A"):
                return True
    return False


def pids_in(nodes: Iterable[Node]) -> list[int]:
    """The processes inside the network namespaces of ``nodes`` (those on this host)."""
    inodes = {i for n in nodes if n.netns is not None and (i := netns_inode(n.netns)) is not None}
    return pids_in_netns(inodes) if inodes else []
