"""The collectors wired to a built lab: snapshots before and after each workload of a trial.

Host-wide CPU (per core, softirqs, context switches) from the root /proc; per-device packet,
byte, drop and error counters for every interface the lab created, read inside each lab
namespace; TCP retransmits and listen drops inside each node namespace; UDP datagrams and
socket-buffer drops in every lab namespace (a tunnel's socket loses packets no device
counts); CPU time of each node's cgroup. With ``$VNETBENCH_PERF`` (the perf program) set,
also a profile of the machine's hot functions per trial (``collectors.perf``). Reading inside
a namespace uses a thread that joins it (no processes).
"""

from __future__ import annotations

from pathlib import Path

from vnetbench.backends.lab import Lab
from vnetbench.collectors.base import Collector, Snapshot
from vnetbench.collectors.cgroup import CgroupCpuCollector
from vnetbench.collectors.cpu import CpuCollector
from vnetbench.collectors.netdev import NetDevCollector
from vnetbench.collectors.perf import PerfProfile
from vnetbench.collectors.tcp import TcpCollector
from vnetbench.collectors.udp import UdpCollector
from vnetbench.host.binaries import env_override
from vnetbench.host.netns import read_in_netns
from vnetbench.results.model import Sample

PERF_ENV = "VNETBENCH_PERF"
"""Names the perf program: set, every trial also records a profile of hot functions."""


def lab_reader(netns: str | None, path: str) -> str:
    """Read ``path``; inside ``netns`` a ``/proc/net/...`` path means that namespace's view."""
    if netns is None:
        return Path(path).read_text()
    if path.startswith("/proc/net/"):
        return read_in_netns(netns, "net/" + path.removeprefix("/proc/net/"))
    return read_in_netns(netns, path)


def counter_collectors(lab: Lab) -> list[Collector]:
    """The collectors of what only the lab's own traffic moves: its devices' packet, byte and
    drop counters, its nodes' TCP counters and the UDP counters of its namespaces (a lab on
    this host)."""
    devices = sorted({d for names in lab.interfaces().values() for d in names})
    node_namespaces = sorted({n.netns for n in lab.nodes if n.netns is not None})
    return [NetDevCollector(lab_reader, namespaces=lab.namespaces(), devices=devices),
            TcpCollector(lab_reader, namespaces=node_namespaces),
            UdpCollector(lab_reader, namespaces=lab.namespaces())]


def lab_collectors(lab: Lab) -> list[Collector]:
    own = lab.backend.collectors(lab.nodes)  # read where the nodes are (other computers)
    if own is not None:
        return own
    cgroups = {}
    for node in lab.nodes:
        if node.cgroup is None:
            continue
        wanted = "cpuacct.usage" if node.cgroup.version == 1 else "cpu.stat"
        found = [d / wanted for d in node.cgroup.dirs if (d / wanted).exists()]
        if found:
            cgroups[node.name] = str(found[0])
    infra = lab.infra()  # the daemons' CPU, whether any runs or not
    wanted = "cpuacct.usage" if infra.version == 1 else "cpu.stat"
    found = [d / wanted for d in infra.dirs if (d / wanted).exists()]
    if found:
        cgroups["infra"] = str(found[0])
    collectors: list[Collector] = [CpuCollector(lab_reader, softnet=True),
                                   *counter_collectors(lab)]
    perf = env_override(PERF_ENV)  # set but not a program: MissingToolError
    if perf is not None:
        collectors.append(PerfProfile(str(perf)))
    if cgroups:
        collectors.append(CgroupCpuCollector(cgroups, lab_reader))
    return collectors


class TrialEvidence:
    """``before()`` then ``after(labels)`` around one workload run (by default with every
    collector of the lab, ``lab_collectors``)."""

    def __init__(self, lab: Lab, collectors: list[Collector] | None = None) -> None:
        self.collectors = lab_collectors(lab) if collectors is None else collectors
        self.snapshots: list[Snapshot] = []

    def before(self) -> None:
        self.snapshots = [c.snapshot() for c in self.collectors]

    def after(self, labels: dict[str, str]) -> list[Sample]:
        out: list[Sample] = []
        for collector, before in zip(self.collectors, self.snapshots, strict=True):
            out += collector.delta(before, collector.snapshot(), labels)
        return out
