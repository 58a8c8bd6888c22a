"""Evidence from real machines: the collectors of a lab on machines, reading each machine's
``/proc`` over its SSH connection, their samples labelled with the machine.

Per machine: host-wide CPU (per core, softirqs, context switches), packet, byte, drop and
error counters of the run's devices and the underlay (in the machine's namespace and in
each node namespace there), and TCP retransmits and listen drops in each node's namespace
(the machine's own for the ``host`` layer). Each sample carries ``machine`` (``h<i>``) and
``machine_ssh`` (its destination). A read is one command over the multiplexed connection.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from vnetbench.backends.machines.node import MachineNode
from vnetbench.backends.machines.ssh import SshConnection
from vnetbench.collectors.base import Collector, Snapshot
from vnetbench.collectors.batch import BatchedReader, FileKey, cat_script, split_files
from vnetbench.collectors.cpu import CpuCollector
from vnetbench.collectors.netdev import NET_DEV, NetDevCollector
from vnetbench.collectors.tcp import NETSTAT, SNMP, TcpCollector
from vnetbench.host.node import Node
from vnetbench.results.model import Sample

READ_TIMEOUT_S = 20.0



class MachineReader(BatchedReader):
    """``read(netns, path)`` on a machine (``netns``: a namespace there, None its own).

    Every file read once is read again, all of them in one command, by ``refresh()``; a
    read answers from that batch when it holds the file (so a snapshot of every collector
    of a machine costs one round trip), else with a command of its own."""

    def __init__(self, conn: SshConnection) -> None:
        self.conn = conn
        self.known: list[FileKey] = []
        self.batch: dict[FileKey, str | None] = {}

    def refresh(self) -> None:
        self.batch = {}
        if not self.known:
            return
        script = cat_script([(f"ip netns exec {shlex.quote(netns)} " if netns else "", path)
                             for netns, path in self.known])
        got = self.conn.run_script(script, timeout=READ_TIMEOUT_S, check=False)
        self.batch = dict(zip(self.known, split_files(got.stdout, len(self.known)),
                              strict=True))

    def read_one(self, netns: str | None, path: str) -> str | None:
        inner = ["ip", "netns", "exec", netns] if netns else []
        got = self.conn.run([*inner, "cat", path], timeout=READ_TIMEOUT_S, check=False)
        return got.stdout if got.returncode == 0 else None

    def missing(self, netns: str | None, path: str) -> str:
        return f"{path} on {self.conn.target}"


class OnMachine(Collector):
    """A collector whose samples say which machine they come from; the first of a machine's
    collectors refreshes the machine's batch of files before its snapshot."""

    def __init__(self, inner: Collector, labels: Mapping[str, str],
                 refresh: bool = False) -> None:
        super().__init__(inner.read)
        self.inner = inner
        self.labels = dict(labels)
        self.name = inner.name
        self.refresh = refresh

    def snapshot(self) -> Snapshot:
        if self.refresh and isinstance(self.read, MachineReader):
            self.read.refresh()
        return self.inner.snapshot()

    def delta(self, before: Snapshot, after: Snapshot,
              labels: Mapping[str, str] | None = None) -> list[Sample]:
        return self.inner.delta(before, after, {**(labels or {}), **self.labels})


def machine_collectors(nodes: Sequence[Node], prefix: str,
                       underlays: Sequence[str]) -> list[Collector]:
    """The collectors of every machine the nodes are on."""
    by_machine: dict[int, list[MachineNode]] = {}
    for node in nodes:
        if isinstance(node, MachineNode):
            by_machine.setdefault(node.host, []).append(node)
    out: list[Collector] = []
    for host, mine in sorted(by_machine.items()):
        conn = mine[0].conn
        if conn is None:
            continue
        read = MachineReader(conn)
        labels = {"machine": f"h{host}", "machine_ssh": conn.target}
        spaces: list[str | None] = list(dict.fromkeys(n.machine_netns for n in mine))
        # what the collectors below read: fetched in one batch from the first snapshot on
        read.known = [(None, "/proc/stat"), (None, "/proc/softirqs"), (None, NET_DEV),
                      *[(ns, NET_DEV) for ns in spaces if ns],
                      *[(ns, path) for ns in spaces for path in (SNMP, NETSTAT)]]
        devices = device_names(conn, spaces, prefix, underlays[host])
        out += [OnMachine(CpuCollector(read), labels, refresh=True),
                OnMachine(NetDevCollector(read, namespaces=[None, *[s for s in spaces if s]],
                                          devices=devices), labels),
                OnMachine(TcpCollector(read, namespaces=spaces), labels)]
    return out


def device_names(conn: SshConnection, spaces: Sequence[str | None], prefix: str,
                 underlay: str) -> list[str]:
    """The run's devices on the machine (named with its prefix) and the underlay."""
    script = "ip -o link show; " + "; ".join(
        f"ip -n {ns} -o link show" for ns in spaces if ns)
    got = conn.run(["sh", "-c", script], timeout=READ_TIMEOUT_S, check=False)
    names = {underlay}
    for line in got.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) > 1:
            name = parts[1].strip().split("@", 1)[0]
            if name.startswith(prefix):
                names.add(name)
    return sorted(names)
