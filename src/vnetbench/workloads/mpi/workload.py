"""MPI workload (study 001): OpenMPI ranks across lab nodes: micro-benchmarks (ping-pong,
barrier, allreduce, a constant-rate gap test) and application kernels with the NAS Parallel
Benchmarks' communication patterns (cg, lu, sp, bt, mg, ft, is).

``run`` starts ``mpirun`` inside ``lab.nodes[0]`` (or its host: mixed placement, below) with
one rank per lab node. The hostfile names hosts by the nodes' addresses (names would send
OpenMPI to DNS, which times out inside the lab): one line ``<ip> slots=<nodes with that
ip>`` in node order, mapped ``--map-by node``, so rank j runs on node j (nodes are placed
round-robin over hosts). mpirun's remote-shell launcher is ``vnetbench.workloads.mpi.agent``
(``--mca plm_rsh_agent "<python> -m vnetbench.workloads.mpi.agent --map <file>"``): for each
hostfile entry it joins that node's cgroups and network namespace and execs the orted
command there, as ssh would on a real cluster. Ranks talk TCP only (``--mca pml ob1 --mca
btl tcp,self``), with the MPI byte transfer layer and ORTE's out-of-band channel both
restricted to the subnets of the nodes' lab interfaces (``btl_tcp_if_include`` /
``oob_tcp_if_include``). With the ``host`` layer the nodes of one emulated host share its
namespace and address: one orted serves them and their ranks bind their own ports.

Mixed placement (``rank0: host``, as study 001's micro-benchmarks: the sender native, the
receiver in the environment under test): rank 0 runs on node 0's emulated host's own network
stack (``lab.host_node``: the host's namespace, its underlay address, no cgroup) in place of
node 0, so mpirun runs there and rank 0 talks from the host namespace to the ranks in the
layer (rank j >= 1 still on node j; node 0 runs nothing). The ``*_if_include`` subnets are
those of the ranks' interfaces, so they include the host's underlay subnet then; a subnet
that also holds another address of the host (a bridge's gateway) is narrowed to a /31 around
each rank in it (``narrow_for_host``), so rank 0 uses its underlay address only. A layer
whose nodes the host cannot route to (an overlay) is skipped. Samples carry ``placement:
rank0-host``.

Nodes whose network stack is not on this host (Kubernetes pods) cannot be joined so: there
mpirun runs in node 0 and starts the other nodes' daemons with the remote shell the backend
gives node 0 (``Node.launch_agent``: for pods, ``kubectl exec`` as the lab's launcher service
account), from a hostfile and an address -> node map written into node 0; the subnets are
read with ``ip`` inside each node, and the benchmark is the image's copy
(``Node.program_path``). ``rank0: host`` is skipped there.

All daemons see one hostname and one filesystem, so each gets its own ``TMPDIR`` (set by
the agent): ORTE's session directory, PMIx's store and hwloc's shared topology live there,
and concurrent daemons sharing them collided (mkdir races, crashes, hung jobs). These
directories sit in a private directory of ``lab.work_dir`` that ``cleanup`` removes, after
killing (by PID) any process of the job that outlived mpirun. ``--leave-session-attached``
keeps the daemons children of their agents, so their errors reach mpirun's stderr and a
timeout kills them with mpirun's process group. Waiting ranks yield the CPU
(``mpi_yield_when_idle``): 8 busy-polling ranks on 2 cores made barriers 100x slower.

The benchmark program is ``vnb-mpi-bench`` (C source in ``workloads/mpi/``, compiled with
``mpicc`` by ``scripts/setup.sh --with apps`` into ``vnetbench/bin``; ``$VNETBENCH_MPI_BENCH``
overrides; if absent but ``mpicc`` is there, it is compiled into the lab's work directory).
Rank 0 prints one JSON line. Micro-benchmarks: min, mean, stddev, p1 .. p999, max in
microseconds; samples are ``<prefix>_<stat>_us`` with prefix ``rtt`` (pingpong), ``sync``
(barrier) or ``allreduce``.

Gap test (``test: gaps``, ``rate`` messages/s, default 1000, ``size`` bytes; study 001's
Figs. 2-3): rank 0 sends a constant-rate stream of messages to rank 1 (MPI_Send, sleeping to
absolute CLOCK_MONOTONIC deadlines), rank 1 timestamps each MPI_Recv return. ``iterations``
timed messages (default 1000) or those of ``duration`` (rate x duration), after ``warmup``
messages (default: those of the first 0.1 s, 1 .. 100). Samples ``send_gap_<stat>_us`` (time
between successive MPI_Send returns), ``recv_gap_<stat>_us`` (between successive arrivals)
and ``recv_gap_dev_<stat>_us`` (arrival gap minus the period 1/rate: the figures' "receive
gap variation"), ``gaps_sent`` and ``gaps_received`` (timed messages), ``gaps_late``
(messages sent more than a period after their deadline: rank 0 could not keep the rate);
labelled ``rate``. Ranks beyond 1 only wait (without spinning).

Kernels (``test: cg|lu|sp|bt|mg|ft|is``, ``class: S|W|A``, ``iterations``; NPB itself is not
packaged): each reproduces one NPB program's communication pattern with a small fixed amount
of computation per point (the C source's header describes each). CG: sparse mat-vec on a
2-D process grid, ring reduce-scatter along rows, segment exchange along columns, two
allreduce dot products per step; LU: pipelined SSOR wavefronts, one small message per plane;
SP and BT: multi-partition ADI sweeps along x, y, z (BT's forward messages larger: 30 values
per face point against 22); MG: V-cycle halo exchanges, 4x smaller per coarser level; FT:
3-D FFT transposes by MPI_Alltoall of large blocks; IS: bucket sort with MPI_Allreduce of
bucket counts, MPI_Alltoall of send counts, MPI_Alltoallv of keys. Class S runs well under
a second on 4 ranks, A a few seconds. Samples: ``mpi_runtime_s`` (wall time of the timed
iterations, slowest rank), ``mpi_comm_s`` (time inside MPI calls, the most of any rank),
``mpi_messages_count`` and ``mpi_bytes`` (sent by all ranks; collectives counted as their
textbook algorithm's messages) and ``mpi_mean_message_bytes``, labelled ``kernel`` and
``class``. Every kernel checks what it receives against values each rank can recompute; a
kernel whose ``verified`` is false is a WorkloadError naming it. In scenarios the class is
written ``class`` (the field is ``size_class``, the name a sweep must use).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from vnetbench.errors import CommandError, MissingToolError, WorkloadError, WorkloadSkipped
from vnetbench.results.model import Sample
from vnetbench.units import Duration, Size
from vnetbench.workloads.base import Entry, WorkloadBase, WorkloadOptions, registry_entry
from vnetbench.workloads.jsonlines import json_objects
from vnetbench.workloads.mpi.bench import BENCH_NAME, find_mpi_bench

if TYPE_CHECKING:
    from vnetbench.host.node import Node
    from vnetbench.workloads.labview import LabView

STATS = ("min", "mean", "stddev", "p1", "p25", "p50", "p75", "p90", "p99", "p999", "max")
PREFIX = {"pingpong": "rtt", "barrier": "sync", "allreduce": "allreduce"}
GAP_PREFIXES = ("send_gap", "recv_gap", "recv_gap_dev")
"""The gap test's distributions (``<prefix>_<stat>`` in its result, ``_us`` in samples)."""
GAP_COUNTS = (("sent", "gaps_sent"), ("received", "gaps_received"), ("late", "gaps_late"))
"""The gap test's message counts: (result field, sample metric)."""
GAP_DEFAULT_RATE = 1000.0
GAP_MAX_RATE = 100_000.0
"""Highest rate of the gap test (messages/s): MPI over TCP sends a message in a few us."""
GAP_MAX_SIZE = 1024**2
GAP_MAX_BYTES_PER_S = 1e9
"""Most bytes/s the gap test may ask for (rate x size), under a 10 Gbit/s link's capacity."""
GAP_MAX_MESSAGES = 10_000_000
"""Most messages of a gap test, warmup included (ranks 0 and 1 keep a timestamp a message)."""
KERNELS = ("cg", "lu", "sp", "bt", "mg", "ft", "is")
"""The application kernels (NAS Parallel Benchmarks' communication patterns)."""
KERNEL_FIELDS = ("kernel", "class", "runtime_s", "comm_s", "messages", "bytes", "verified")
LAUNCH_SLACK_S = 60.0
"""Seconds allowed for starting the daemons and ranks, on top of the measured time."""


class MpiOptions(WorkloadOptions):
    """One MPI benchmark, one rank per node: a micro-benchmark (a fixed iteration count or a
    duration; the gap test's messages at a rate) or an application kernel (a problem class and
    an iteration count); rank 0 in node 0 or on its emulated host's own stack (``rank0``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_by_name=True,
                              validate_by_alias=True)
    many_threaded: ClassVar[bool] = True
    launches: ClassVar[bool] = True

    test: Literal["pingpong", "barrier", "allreduce", "gaps", "cg", "lu", "sp", "bt", "mg",
                  "ft", "is"] = "pingpong"
    size_class: Literal["S", "W", "A"] = Field(default="S", alias="class")
    """A kernel's problem size (written ``class`` in scenarios); micro-benchmarks ignore it."""
    iterations: int | None = Field(default=None, ge=1, le=100_000_000)
    """Micro-benchmarks: 1000 unless a duration is given (gaps: timed messages); kernels:
    each kernel's default."""
    duration: Duration | None = Field(default=None, gt=0)
    size: Size = Field(default=8, ge=0, le=64 * 1024**2)
    """Message size of the micro-benchmarks (gaps: at most 1 MiB); kernels ignore it."""
    rate: float | None = Field(default=None, gt=0, le=GAP_MAX_RATE)
    """Messages per second of the gap test (1000 unless given); only for ``test: gaps``."""
    warmup: int | None = Field(default=None, ge=0, le=100_000_000)
    """Untimed iterations first: 100 for micro-benchmarks (gaps: the messages of the first
    0.1 s, 1 .. 100), 1 for kernels unless given."""
    rank0: Literal["node", "host"] = "node"
    """Where rank 0 (and mpirun) runs: ``node`` (node 0, in the layer) or ``host`` (node 0's
    emulated host's own network stack: the native side of a mixed placement)."""
    timeout: Duration = Field(default=300.0, gt=0)
    yield_when_idle: bool = True
    """Waiting ranks yield the CPU (``mpi_yield_when_idle``): needed when ranks outnumber cores."""

    @model_validator(mode="after")
    def _iterations_or_duration(self) -> MpiOptions:
        if self.iterations is not None and self.duration is not None:
            raise ValueError("give iterations or duration, not both")
        if self.is_kernel and self.duration is not None:
            raise ValueError(f"the {self.test} kernel runs a number of iterations, not a duration")
        if self.test != "gaps":
            if self.rate is not None:
                raise ValueError(f"rate applies to the gaps test, not {self.test}")
            return self
        if self.size > GAP_MAX_SIZE:
            raise ValueError(f"gaps: size {self.size} B is over {GAP_MAX_SIZE} B")
        if self.gap_rate * self.size > GAP_MAX_BYTES_PER_S:
            raise ValueError(f"gaps: {self.gap_rate:g} messages/s of {self.size} B is over "
                             f"{GAP_MAX_BYTES_PER_S:g} B/s: lower rate or size")
        messages = self.gap_messages
        if not 2 <= messages <= GAP_MAX_MESSAGES:
            raise ValueError(f"gaps: {messages} timed messages; give 2 .. {GAP_MAX_MESSAGES} "
                             "(iterations, or rate x duration)")
        if messages + self.gap_warmup > GAP_MAX_MESSAGES:
            raise ValueError(f"gaps: {messages} timed + {self.gap_warmup} warmup messages is over "
                             f"{GAP_MAX_MESSAGES}")
        return self

    @property
    def gap_rate(self) -> float:
        """The gap test's rate (messages/s): ``rate``, else 1000."""
        return GAP_DEFAULT_RATE if self.rate is None else self.rate

    @property
    def gap_messages(self) -> int:
        """The gap test's timed messages: ``iterations``, or floor(rate x duration), or 1000
        (as ``vnb-mpi-bench`` counts them)."""
        if self.iterations is not None:
            return self.iterations
        if self.duration is not None:
            return math.floor(self.gap_rate * self.duration)
        return 1000

    @property
    def gap_warmup(self) -> int:
        """The gap test's untimed messages: ``warmup``, else those of the first 0.1 s (1 .. 100)."""
        if self.warmup is not None:
            return self.warmup
        return int(min(100.0, max(1.0, math.ceil(self.gap_rate * 0.1))))

    @property
    def is_kernel(self) -> bool:
        return self.test in KERNELS

    def labels(self) -> dict[str, str]:
        """Labels on every sample of the run (evidence included), so several MPI tests in one
        trial stay apart: the test, a kernel's name and class, the gap test's rate, and the
        placement (``rank0-host`` when rank 0 is native, else ``in-layer``)."""
        kernel = {"kernel": self.test, "class": self.size_class} if self.is_kernel else {}
        rate = {"rate": f"{self.gap_rate:g}"} if self.test == "gaps" else {}
        placement = {"placement": "rank0-host" if self.rank0 == "host" else "in-layer"}
        return {"test": self.test, **kernel, **rate, **placement}


# ---- parsing (pure) --------------------------------------------------------------------------


def parse_mpi_output(text: str) -> dict[str, float | str | bool]:
    """The JSON result line of ``vnb-mpi-bench`` (the last one) as a dict; ValueError if none
    or if it lacks a field its test reports.

    A kernel's result keeps ``verified`` as a bool (a failed one is parsed, not refused:
    ``to_samples`` names it)."""
    for data in reversed(list(json_objects(text))):
        if data.get("tool") == BENCH_NAME:
            needed = _needed_fields(str(data.get("test", "")))
            missing = [s for s in needed if s not in data]
            if missing:
                raise ValueError(f"{BENCH_NAME} result lacks {', '.join(missing)}")
            if "verified" in data and not isinstance(data["verified"], bool):
                raise ValueError(f"{BENCH_NAME} result: verified is {data['verified']!r}, not a bool")
            return {str(k): v for k, v in data.items() if isinstance(v, int | float | str)}
    tail = " | ".join(text.strip().splitlines()[-3:])
    raise ValueError(f"no {BENCH_NAME} result in the output: {tail or '(empty)'}")


def _needed_fields(test: str) -> tuple[str, ...]:
    """The fields a result of ``test`` must have."""
    if test in KERNELS:
        return KERNEL_FIELDS
    if test == "gaps":
        return ("rate", *(field for field, _ in GAP_COUNTS),
                *(f"{prefix}_{stat}" for prefix in GAP_PREFIXES for stat in STATS))
    return STATS


def check_verified(parsed: dict[str, float | str | bool]) -> None:
    """WorkloadError naming the kernel when its result says it failed its verification."""
    if parsed.get("verified") is not True:
        kernel = parsed.get("kernel", parsed.get("test", "?"))
        raise WorkloadError(f"MPI kernel {kernel} (class {parsed.get('class', '?')}, "
                            f"{parsed.get('ranks', '?')} ranks) failed its verification: "
                            f"{parsed.get('errors', '?')} wrong values received or computed")


def kernel_samples(parsed: dict[str, float | str | bool], labels: dict[str, str]) -> list[Sample]:
    """A kernel's ``mpi_*`` samples, labelled ``kernel`` and ``class``; WorkloadError when it
    failed its verification."""
    check_verified(parsed)
    kernel = str(parsed["kernel"])
    base = {**labels, "test": kernel, "kernel": kernel, "class": str(parsed["class"]),
            "ranks": str(parsed.get("ranks", ""))}
    messages, sent = float(parsed["messages"]), float(parsed["bytes"])
    values = [("mpi_runtime_s", float(parsed["runtime_s"]), "s"),
              ("mpi_comm_s", float(parsed["comm_s"]), "s"),
              ("mpi_messages_count", messages, "count"),
              ("mpi_bytes", sent, "B"),
              ("mpi_mean_message_bytes", sent / messages if messages > 0 else 0.0, "B")]
    return [Sample(metric, value, unit, dict(base)) for metric, value, unit in values]


def gap_samples(parsed: dict[str, float | str | bool], labels: dict[str, str]) -> list[Sample]:
    """The gap test's ``send_gap_<stat>_us``, ``recv_gap_<stat>_us``, ``recv_gap_dev_<stat>_us``
    and ``gaps_sent`` / ``gaps_received`` / ``gaps_late`` (count), labelled ``rate``."""
    base = {**labels, "test": "gaps", "ranks": str(parsed.get("ranks", "")),
            "size": str(parsed.get("size", "")), "rate": f"{float(parsed['rate']):g}"}
    samples = [Sample(f"{prefix}_{stat}_us", float(parsed[f"{prefix}_{stat}"]), "us", dict(base))
               for prefix in GAP_PREFIXES for stat in STATS]
    samples += [Sample(metric, float(parsed[field]), "count", dict(base))
                for field, metric in GAP_COUNTS]
    return samples


def to_samples(parsed: dict[str, float | str | bool], labels: dict[str, str]) -> list[Sample]:
    """``<prefix>_<stat>_us`` samples (prefix by test) plus ``<prefix>_iterations``; a kernel's
    ``mpi_*`` samples (``kernel_samples``); the gap test's (``gap_samples``)."""
    if parsed.get("test") in KERNELS:
        return kernel_samples(parsed, labels)
    if parsed.get("test") == "gaps":
        return gap_samples(parsed, labels)
    test = str(parsed.get("test", "pingpong"))
    prefix = PREFIX.get(test, test)
    base = {**labels, "test": test, "ranks": str(parsed.get("ranks", "")),
            "size": str(parsed.get("size", ""))}
    samples = [Sample(f"{prefix}_{stat}_us", float(parsed[stat]), "us", dict(base))
               for stat in STATS]
    if "iterations" in parsed:
        samples.append(Sample(f"{prefix}_iterations", float(parsed["iterations"]), "count",
                              dict(base)))
    return samples


# ---- finding / building the benchmark --------------------------------------------------------


def _mpirun() -> str:
    path = shutil.which("mpirun")
    if path is None:
        raise MissingToolError("mpirun not found: apt-get install openmpi-bin libopenmpi-dev "
                               "(or run scripts/setup.sh --with apps)")
    return path


def _pids_mentioning(marker: str) -> list[int]:
    """PIDs whose command line or environment contains ``marker`` (our private directory:
    the agent map in daemons' arguments, ``TMPDIR`` in every process of the job)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            text = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in text:
            pids.append(int(entry.name))
    return pids


def _inet_addresses(netns: str, dev: str | None = None) -> list[ipaddress.IPv4Interface]:
    """The IPv4 addresses (with prefix) in namespace ``netns``, of ``dev`` or of every device."""
    argv = ["ip", "-n", netns, "-o", "-4", "addr", "show", *(("dev", dev) if dev else ())]
    return parse_inet(subprocess.run(argv, capture_output=True, text=True, check=False).stdout)


def parse_inet(out: str) -> list[ipaddress.IPv4Interface]:
    """The addresses of ``ip -o -4 addr show`` output (iproute2's or busybox's)."""
    found = []
    for line in out.splitlines():
        fields = line.split()
        if "inet" in fields:
            found.append(ipaddress.IPv4Interface(fields[fields.index("inet") + 1]))
    return found


def remote_subnets(nodes: Sequence[Node]) -> list[str]:
    """``node_subnets`` of nodes whose network stack is not on this host (pods), read with
    ``ip`` run inside each (any device: a hostNetwork pod's is the node's own)."""
    subnets: set[str] = set()
    for node in {n.ip: n for n in nodes}.values():
        got = node.run(["ip", "-o", "-4", "addr", "show"], timeout=30.0)
        mine = [a for a in parse_inet(got.stdout) if str(a.ip) == node.ip]
        if not mine:
            raise WorkloadError(f"no IPv4 address {node.ip} in {node.name}: "
                                f"{got.stdout.strip()[-300:]}")
        subnets.update(str(a.network) for a in mine)
    return sorted(subnets)


def node_subnets(lab: LabView, nodes: Sequence[Node] | None = None) -> list[str]:
    """The subnets (CIDR) of the nodes' lab interfaces (``nodes``, else ``lab.nodes``; a host
    node's: its underlay subnet), read with ``ip -o addr`` in each node.

    OpenMPI's ``*_if_include`` takes these (a list of interface names would name devices
    absent from most namespaces, which OpenMPI rejects; a /32 per node matches loopback too:
    OpenMPI's netmask of a /32 is 0). Each process turns every CIDR into the name of its
    first local interface in it, and uses every included interface's addresses.
    """
    subnets: set[str] = set()
    for node in lab.nodes if nodes is None else nodes:
        mine = [a for a in _inet_addresses(node.namespace("mpi"), node.ifname)
                if str(a.ip) == node.ip]
        if not mine:
            raise WorkloadError(f"no IPv4 address {node.ip} on {node.ifname} in {node.netns}")
        subnets.update(str(a.network) for a in mine)
    return sorted(subnets)


def narrow_for_host(host: Node, ranks: Sequence[Node], subnets: Sequence[str]) -> list[str]:
    """``subnets`` such that no other address of ``host``'s namespace falls in them: a subnet
    holding one (a bridge's gateway address, on the host, in its nodes' subnet) is replaced
    by the /31 around each rank's address in it (kept when that /31 holds one too).

    Else rank 0 on the host would include its bridge as well as its underlay interface, and
    connect to a node of its own host from the one address while the node knows it by the
    other: OpenMPI drops such a connection and retries ("unexpected IP address").
    """
    others = {a.ip for a in _inet_addresses(host.namespace("mpi"))
              if str(a.ip) != host.ip and not a.ip.is_loopback}
    narrowed: set[str] = set()
    for subnet in subnets:
        net = ipaddress.IPv4Network(subnet)
        if not any(ip in net for ip in others):
            narrowed.add(subnet)
            continue
        for node in ranks:
            if ipaddress.IPv4Address(node.ip) in net:
                pair = ipaddress.IPv4Network(f"{node.ip}/31", strict=False)
                narrowed.add(subnet if any(ip in pair for ip in others) else str(pair))
    return sorted(narrowed)


def hostfile(ranks: Sequence[Node]) -> str:
    """mpirun's hostfile: one line ``<ip> slots=<ranks there>`` per address, in rank order
    (nodes sharing an address, as the host layer's or hostNetwork pods on one node, share a
    daemon)."""
    slots = Counter(node.ip for node in ranks)
    return "".join(f"{ip} slots={n}\n" for ip, n in slots.items())


def rank_nodes(lab: LabView, rank0: Literal["node", "host"]) -> list[Node]:
    """Where each rank runs, in rank order: rank j on node j, except rank 0 on node 0's
    emulated host's own stack (``lab.host_node``) with ``rank0: host``."""
    nodes = list(lab.nodes)
    if rank0 == "host":
        nodes[0] = lab.host_node(nodes[0].host)
    return nodes


# ---- the workload ----------------------------------------------------------------------------


class MpiWorkload(WorkloadBase):
    """``mpirun`` from rank 0's node (node 0, or its host with ``rank0: host``), one rank per
    node, daemons started by ``mpi_agent``."""

    def __init__(self, options: MpiOptions) -> None:
        self.options = options
        self.name = f"mpi-{options.test}"
        self._dir: Path | None = None
        self._bench: Path | None = None
        self._subnets: list[str] = []
        self._ranks: list[Node] = []
        """Where each rank runs (``rank_nodes``), set by ``prepare``."""
        self._remote: Path | None = None
        """Rank 0's directory in its node, when the ranks' nodes are not on this host."""
        self._agent = ""
        """The remote-shell command mpirun starts daemons with."""

    def prepare(self, lab: LabView) -> None:
        if len(lab.nodes) < 2:
            raise WorkloadError(f"{self.name} needs at least 2 nodes, the lab has {len(lab.nodes)}")
        if lab.layer.publishes_ports:
            raise WorkloadError(f"{self.name}: MPI ranks connect to each other's addresses, which "
                                f"the {lab.layer.name} layer does not route between nodes")
        _mpirun()
        if lab.nodes[0].netns is None:
            self._prepare_remote(lab)
            return
        ranks = rank_nodes(lab, self.options.rank0)
        if self.options.rank0 == "host":
            for node in ranks[1:]:  # WorkloadSkipped when the host has no route to a node
                lab.endpoint(ranks[0], node, 1024)  # (ranks listen on ports from 1024)
        self._dir = Path(tempfile.mkdtemp(prefix="mpi-", dir=lab.work_dir))
        self._bench = find_mpi_bench(self._dir / "build")
        (self._dir / "tmp").mkdir()
        hosts: dict[str, dict[str, object]] = {}
        for node in ranks:  # nodes sharing a namespace (host layer) share an address
            if node.ip in hosts:
                continue
            tmpdir = self._dir / "tmp" / node.name
            tmpdir.mkdir()
            hosts[node.ip] = {
                "netns": node.netns,
                "cgroup_procs": [str(p) for p in (node.cgroup.procs_files if node.cgroup else ())],
                "tmpdir": str(tmpdir),
            }
        (self._dir / "tmp" / "mpirun").mkdir()
        self._subnets = node_subnets(lab, ranks)
        if self.options.rank0 == "host":
            self._subnets = narrow_for_host(ranks[0], ranks, self._subnets)
        self._ranks = ranks
        (self._dir / "hosts.json").write_text(json.dumps(hosts, indent=1))
        (self._dir / "hostfile").write_text(hostfile(ranks))
        self._agent = (f"{sys.executable} -m vnetbench.workloads.mpi.agent "
                       f"--map {self._dir / 'hosts.json'}")

    def _prepare_remote(self, lab: LabView) -> None:
        """Ranks in nodes whose network stack is not on this host: mpirun in node 0 starts
        the other nodes' daemons with the node's own remote shell (``launch_agent``: a pod's
        ``kubectl exec``), from files written into node 0."""
        first = lab.nodes[0]
        agent = first.launch_agent()
        if agent is None:
            raise WorkloadError(f"{self.name} needs nodes on this host or nodes that can start "
                                f"programs in each other (Kubernetes pods); node {first.name} "
                                "cannot")
        if self.options.rank0 == "host":
            raise WorkloadSkipped(f"{self.name}: rank0: host is not supported on "
                                  f"{lab.layer.name} (its hosts are not on this machine)")
        ranks = list(lab.nodes)
        self._bench = Path(first.program_path(str(find_mpi_bench())))
        self._remote = first.work_dir(lab.work_dir) / f"mpi-{os.urandom(4).hex()}"
        names = {n.ip: n.launch_name() for n in reversed(ranks)}  # a shared address: the first
        first.write_file(self._remote / "hosts", "".join(f"{ip} {name}\n"
                                                         for ip, name in names.items()))
        first.write_file(self._remote / "hostfile", hostfile(ranks))
        first.write_file(self._remote / "tmp" / "mpirun" / ".keep", "")
        self._subnets = remote_subnets(ranks)
        self._ranks = ranks
        self._dir = self._remote
        self._agent = f"{agent} --map {self._remote / 'hosts'}"

    def argv(self, lab: LabView) -> list[str]:
        """The mpirun command line (run where rank 0 runs)."""
        assert self._dir is not None and self._bench is not None
        o = self.options
        ifaces = ",".join(self._subnets)
        if o.is_kernel:
            bench = [str(self._bench), "--test", o.test, "--class", o.size_class]
            if o.iterations is not None:
                bench += ["--iterations", str(o.iterations)]
            if o.warmup is not None:
                bench += ["--warmup", str(o.warmup)]
        elif o.test == "gaps":  # the message count as vnb-mpi-bench would compute it
            bench = [str(self._bench), "--test", "gaps", "--rate", str(o.gap_rate),
                     "--size", str(o.size), "--warmup", str(o.gap_warmup),
                     "--iterations", str(o.gap_messages)]
        else:
            bench = [str(self._bench), "--test", o.test, "--size", str(o.size),
                     "--warmup", str(100 if o.warmup is None else o.warmup)]
            if o.duration is not None:
                bench += ["--duration", f"{o.duration:g}"]
            else:
                bench += ["--iterations", str(o.iterations or 1000)]
        return [
            _mpirun(), "--allow-run-as-root", "--oversubscribe", "--leave-session-attached",
            "-np", str(len(lab.nodes)),
            "--hostfile", str(self._dir / "hostfile"), "--map-by", "node",
            "--mca", "plm", "rsh", "--mca", "plm_rsh_agent", self._agent,
            "--mca", "plm_rsh_no_tree_spawn", "1",
            "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", ifaces, "--mca", "oob_tcp_if_include", ifaces,
            "--mca", "routed", "direct",
            "--mca", "mpi_yield_when_idle", "1" if o.yield_when_idle else "0",
            *bench,
        ]

    def run(self, lab: LabView, raw_dir: Path) -> list[Sample]:
        if self._dir is None:
            raise WorkloadError(f"{self.name}: run() before prepare()")
        o = self.options
        raw_dir.mkdir(parents=True, exist_ok=True)
        env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
               "OMPI_MCA_btl_base_warn_component_unused": "0",
               "TMPDIR": str(self._dir / "tmp" / "mpirun")}
        if o.test == "gaps":
            timeout = (o.gap_messages + o.gap_warmup) / o.gap_rate + LAUNCH_SLACK_S
        else:
            timeout = o.duration + LAUNCH_SLACK_S if o.duration is not None else o.timeout
        name = (f"mpi-{o.test}-{o.size_class}-n{len(lab.nodes)}" if o.is_kernel
                else f"mpi-{o.test}-n{len(lab.nodes)}-s{o.size}")
        if o.test == "gaps":
            name += f"-r{o.gap_rate:g}"
        if o.rank0 == "host":
            name += "-rank0host"
        try:
            result = self._ranks[0].run(self.argv(lab), timeout=timeout, check=False, env=env)
        except CommandError as exc:  # timed out: keep what mpirun said
            (raw_dir / f"{name}.stderr").write_text(exc.stderr)
            tail = " | ".join(exc.stderr.strip().splitlines()[-5:])
            raise WorkloadError(f"mpirun did not finish within {timeout:.0f}s: {tail}") from exc
        (raw_dir / f"{name}.json").write_text(result.stdout)
        if result.stderr.strip():
            (raw_dir / f"{name}.stderr").write_text(result.stderr)
        tail = " | ".join((result.stderr or result.stdout).strip().splitlines()[-5:])
        if result.returncode != 0:
            with contextlib.suppress(ValueError):  # a kernel that failed its verification
                failed = parse_mpi_output(result.stdout)
                if failed.get("test") in KERNELS:
                    check_verified(failed)
            raise WorkloadError(f"mpirun exited {result.returncode}: {tail}")
        try:
            parsed = parse_mpi_output(result.stdout)
        except ValueError as exc:
            raise WorkloadError(f"{exc}; stderr: {tail}") from exc
        return to_samples(parsed, {})

    def cleanup(self, lab: LabView) -> None:
        if self._remote is not None:  # the daemons end with mpirun; its files in node 0
            lab.nodes[0].remove_dir(self._remote)
            self._remote = self._dir = None
            self._ranks = []
            return
        if self._dir is None:
            return
        for pid in _pids_mentioning(str(self._dir)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None
        self._ranks = []


MPI_WORKLOADS: dict[str, Entry] = {
    "mpi": registry_entry(MpiOptions, MpiWorkload),
}
"""Scenario key -> (options model, factory) for the registry."""
