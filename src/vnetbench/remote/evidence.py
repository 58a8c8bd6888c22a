"""Evidence from real machines: the collectors of a lab on machines, reading each machine's
``/proc`` over its SSH connection, their samples labelled with the machine.

Per machine: host-wide CPU (per core, softirqs, context switches), packet, byte, drop and
error counters of the run's devices and the underlay (in the machine's namespace and in
each node namespace there), and TCP retransmits and listen drops in each node's namespace
(the machine's own for the ``host`` layer). Each sample carries ``machine`` (``h<i>``) and
``machine_ssh`` (its destination). A read is one command over the multiplexed connection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vnetbench.collectors.base import Collector, Reader, Snapshot
from vnetbench.collectors.cpu import CpuCollector
from vnetbench.collectors.netdev import NetDevCollector
from vnetbench.collectors.tcp import TcpCollector
from vnetbench.node import Node
from vnetbench.remote.node import MachineNode
from vnetbench.remote.ssh import SshConnection
from vnetbench.results.model import Sample

READ_TIMEOUT_S = 20.0


def machine_reader(conn: SshConnection) -> Reader:
    """``read(netns, path)`` on the machine (``netns``: a namespace there, None its own)."""
    def read(netns: str | None, path: str) -> str:
        inner = ["ip", "netns", "exec", netns] if netns else []
        got = conn.run([*inner, "cat", path], timeout=READ_TIMEOUT_S, check=False)
        if got.returncode != 0:
            raise FileNotFoundError(f"{path} on {conn.target}: {got.stderr.strip()}")
        return got.stdout
    return read


class OnMachine(Collector):
    """A collector whose samples say which machine they come from."""

    def __init__(self, inner: Collector, labels: Mapping[str, str]) -> None:
        super().__init__(inner.read)
        self.inner = inner
        self.labels = dict(labels)
        self.name = inner.name

    def snapshot(self) -> Snapshot:
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
        read = machine_reader(conn)
        labels = {"machine": f"h{host}", "machine_ssh": conn.target}
        spaces: list[str | None] = list(dict.fromkeys(n.machine_netns for n in mine))
        devices = device_names(conn, spaces, prefix, underlays[host])
        out += [OnMachine(CpuCollector(read), labels),
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
