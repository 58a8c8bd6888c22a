"""Evidence from the Kubernetes nodes a lab's pods run on: host-wide CPU (per core, softirqs,
context switches), packets, bytes, drops and errors of the node's devices on the pods' path,
and TCP retransmits and listen drops in each pod's network namespace, and the CPU time of each
pod's cgroup (as the lab's node cgroups: what CPU per transaction is computed from).

With evidence pods (the default), everything of a Kubernetes node is read by its evidence pod
(hostNetwork, hostPID) in one ``kubectl exec`` per snapshot: the node's own ``/proc``, and a
pod's network namespace through ``/proc/<pid>/net/`` of the pod's idle process (found once by
its ``VNB_POD`` environment variable). The node's devices measured are its uplink, its
bridges and tunnels, and the host side of each vnetbench pod's interface (by ifindex). Without
evidence pods, a node's CPU is read in one of vnetbench's pods there (``/proc/stat`` is the
node's in every container) and each pod's counters in the pod. Samples carry ``machine``
(``h<i>``) and ``k8s_node``.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from vnetbench.backends.kubernetes.detect import NodeFacts
from vnetbench.backends.kubernetes.manifests import IDLE, POD_ENV
from vnetbench.backends.kubernetes.node import PodNode
from vnetbench.collectors.base import Collector, Snapshot
from vnetbench.collectors.batch import BatchedReader, FileKey, cat_script, split_files
from vnetbench.collectors.cgroup import CgroupCpuCollector
from vnetbench.collectors.cpu import CpuCollector
from vnetbench.collectors.netdev import NET_DEV, NetDevCollector
from vnetbench.collectors.tcp import NETSTAT, SNMP, TcpCollector
from vnetbench.results.model import Sample

READ_TIMEOUT_S = 30.0


CGROUP_ROOTS = ("/host/cgroup/cpuacct", "/host/cgroup")
"""Where a pod's cgroup is looked for in the evidence pod (the node's /sys/fs/cgroup): the
cgroup v1 cpuacct hierarchy, else the v2 tree."""


def cgroup_script(pods: Mapping[str, str]) -> str:
    """For the evidence pod: each pod's own cgroup directory (``@@cg NAME DIR``), found by
    its UID as kubelet names it with either driver (``pod<uid>``, ``...-pod<uid_>.slice``)."""
    lines = []
    for name, uid in pods.items():
        under = uid.replace("-", "_")
        lines.append(
            f"for d in $(find {' '.join(CGROUP_ROOTS)} -maxdepth 6 -type d \\( -name "
            f"pod{shlex.quote(uid)} -o -name '*pod{under}.slice' \\) 2>/dev/null); do "
            f"echo \"@@cg {name} $d\"; break; done")
    return "\n".join(lines) + "\n"


def parse_cgroups(text: str) -> dict[str, str]:
    """``cgroup_script`` output -> pod name -> its CPU usage file (v1 ``cpuacct.usage``, v2
    ``cpu.stat``)."""
    out = {}
    for line in text.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3 and parts[0] == "@@cg" and parts[2].startswith("/"):
            usage = "cpuacct.usage" if parts[2].startswith(CGROUP_ROOTS[0] + "/") else "cpu.stat"
            out[parts[1]] = f"{parts[2]}/{usage}"
    return out


def locate_script(pods: Sequence[str]) -> str:
    """For the evidence pod: each pod's idle process, the ifindex of its interface's peer on
    the node and the interface's MTU (``@@pid NAME PID IFLINK MTU``)."""
    idle = " ".join(IDLE) + " "
    lines = []
    for name in pods:
        q = shlex.quote(f"{POD_ENV}={name}")
        lines.append(
            f"for f in $(grep -lzx {q} /proc/[0-9]*/environ 2>/dev/null); do "
            f"p=${{f#/proc/}}; p=${{p%/environ}}; "
            f"[ \"$(tr '\\0' ' ' < /proc/$p/cmdline)\" = {shlex.quote(idle)} ] || continue; "
            f"n=/proc/$p/root/sys/class/net/eth0; "
            f"echo \"@@pid {name} $p $(cat $n/iflink 2>/dev/null || echo 0) "
            f"$(cat $n/mtu 2>/dev/null || echo 0)\"; break; done")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Located:
    """A pod as its node's evidence pod sees it."""

    pid: int
    """Its idle process (``/proc/<pid>/net`` is its network namespace)."""
    peer: int
    """The ifindex of its interface's peer on the node (0: none found)."""
    mtu: int


def parse_located(text: str) -> dict[str, Located]:
    """``locate_script`` output -> pod name -> where it is."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[0] == "@@pid" and all(p.isdigit() for p in parts[2:]):
            out[parts[1]] = Located(int(parts[2]), int(parts[3]), int(parts[4]))
    return out


@dataclass
class PodReader(BatchedReader):
    """``read(netns, path)`` on one Kubernetes node: ``netns`` None is the node's own
    namespace, else a pod's name. Every file read once is read again by ``refresh()``, all of
    a reader pod's files in one ``kubectl exec``; a read answers from that batch."""

    shell: PodNode
    """Who reads the node's own files (its evidence pod, else one of vnetbench's pods)."""
    pods: Mapping[str, PodNode]
    pids: Mapping[str, int] = field(default_factory=dict)
    """Pods read through the shell at ``/proc/<pid>/net`` (evidence pods, hostPID)."""
    known: list[FileKey] = field(default_factory=list)
    batch: dict[FileKey, str | None] = field(default_factory=dict)

    def _where(self, netns: str | None, path: str) -> tuple[PodNode, str]:
        if netns is None:
            return self.shell, path
        if netns in self.pids and path.startswith("/proc/net/"):
            return self.shell, f"/proc/{self.pids[netns]}/net/{path.removeprefix('/proc/net/')}"
        return self.pods[netns], path

    def refresh(self) -> None:
        self.batch = {}
        by_reader: dict[int, tuple[PodNode, list[tuple[FileKey, str]]]] = {}
        for key in self.known:
            reader, path = self._where(*key)
            by_reader.setdefault(id(reader), (reader, []))[1].append((key, path))
        for reader, wanted in by_reader.values():
            script = cat_script([("", path) for _, path in wanted])
            got = reader.run(["sh", "-c", script], timeout=READ_TIMEOUT_S, check=False)
            texts = split_files(got.stdout, len(wanted))
            self.batch.update(zip((key for key, _ in wanted), texts, strict=True))

    def read_one(self, netns: str | None, path: str) -> str | None:
        reader, where = self._where(netns, path)
        got = reader.run(["cat", where], timeout=READ_TIMEOUT_S, check=False)
        return got.stdout if got.returncode == 0 else None

    def missing(self, netns: str | None, path: str) -> str:
        return f"{path} of {netns or 'the node'} on {self.shell.k8s_node}"


class OnK8sNode(Collector):
    """A collector whose samples say which Kubernetes node they come from; the first of a
    node's collectors refreshes the node's batch before its snapshot."""

    def __init__(self, inner: Collector, reader: PodReader, labels: Mapping[str, str],
                 refresh: bool = False) -> None:
        super().__init__(inner.read)
        self.inner, self.reader, self.labels, self.refresh = inner, reader, dict(labels), refresh
        self.name = inner.name

    def snapshot(self) -> Snapshot:
        if self.refresh:
            self.reader.refresh()
        return self.inner.snapshot()

    def delta(self, before: Snapshot, after: Snapshot,
              labels: Mapping[str, str] | None = None) -> list[Sample]:
        return self.inner.delta(before, after, {**(labels or {}), **self.labels})


@dataclass(frozen=True)
class NodeEvidence:
    """What the collectors of one Kubernetes node need to know."""

    host: int
    k8s_node: str
    pods: tuple[PodNode, ...]
    """vnetbench's pods on it."""
    evidence: PodNode | None = None
    facts: NodeFacts | None = None
    located: Mapping[str, Located] = field(default_factory=dict)
    """Where each pod is (found by the evidence pod)."""
    cgroups: Mapping[str, str] = field(default_factory=dict)
    """vnetbench node name -> its pod's CPU usage file on the node (evidence pods only)."""

    def devices(self) -> list[str]:
        """The node's devices on the pods' path: uplink, bridges, tunnels, the pods' peers."""
        if self.facts is None:
            return []
        peers = {where.peer for where in self.located.values() if where.peer}
        tunnels = self.facts.tunnels()
        return sorted({d.name for d in self.facts.devices
                       if d.name == self.facts.default_dev or d.devtype == "bridge"
                       or d.name in tunnels or d.ifindex in peers})


def node_collectors(node: NodeEvidence) -> list[Collector]:
    """The collectors of one Kubernetes node (see the module docstring)."""
    shell = node.evidence or node.pods[0]
    own_net = [p for p in node.pods if not p.host_network]
    pids = {p.pod: node.located[p.pod].pid for p in own_net
            if node.evidence is not None and p.pod in node.located}
    read = PodReader(shell, {p.pod: p for p in node.pods}, pids)
    spaces: list[str | None] = [p.pod for p in own_net]
    node_ns: list[str | None] = [None] if node.evidence is not None or len(own_net) < len(
        node.pods) else []
    read.known = [(None, "/proc/stat"), (None, "/proc/softirqs"),
                  *[(ns, NET_DEV) for ns in [*node_ns, *spaces]],
                  *[(ns, path) for ns in [*node_ns, *spaces] for path in (SNMP, NETSTAT)]]
    read.known += [(None, path) for path in node.cgroups.values()]
    labels = {"machine": f"h{node.host}", "k8s_node": node.k8s_node}
    devices = node.devices() + (["eth0"] if spaces else [])
    out: list[Collector] = [
        OnK8sNode(CpuCollector(read), read, labels, refresh=True),
        OnK8sNode(NetDevCollector(read, namespaces=[*node_ns, *spaces], devices=devices or None),
                  read, labels),
        OnK8sNode(TcpCollector(read, namespaces=[*node_ns, *spaces]), read, labels)]
    if node.cgroups:  # the pods' CPU, as the lab's node cgroups give it (CPU per transaction)
        out.append(OnK8sNode(CgroupCpuCollector(node.cgroups, read), read, labels))
    return out
