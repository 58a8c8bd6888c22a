"""The lab's lifecycle: build a virtual cluster from a plan, hand out its nodes, tear it down
without a trace. What a node *is* belongs to its backend (``vnetbench.backends``).

    with open_lab(LabSpec("bridge", hosts=2, nodes=4)) as lab:
        server, client = lab.nodes[0], lab.nodes[1]
        port = lab.listen_port(server, 7000)
        server.spawn([probe, "serve", "--port", str(port)])
        server.wait_listening(port)
        addr, cport = lab.endpoint(client, server, port)
        client.run([probe, "rr", "--server", f"{addr}:{cport}"], timeout=30)

Lifecycle: check root, the layer's tools and kernel features (nothing built on failure);
claim a short id and a free /16 (state file); the backend prepares the topology
(``Backend.prepare``); compute the plan once (``lab_plan.make_plan``); the backend applies
its kernel stages and realises the nodes.
Teardown (on success, error, Ctrl-C and SIGTERM; a signal arriving during teardown is acted
on right after it, see ``signals``) stops the workloads' processes by PID, lets the backend
undo what it made (containers, engines, guests), stops the remaining tracked processes
(the layers' daemons), any process left inside a lab namespace, deletes the namespaces
(which removes every link, route, rule and qdisc in them), removes cgroups, files and the
state file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from vnetbench.backends.base import Backend, LabContext, LabPlan
from vnetbench.backends.catalog import get_layer
from vnetbench.backends.lab_plan import make_plan
from vnetbench.backends.netns.node import HostNode
from vnetbench.backends.registry import spec_backend_class
from vnetbench.errors import (
    LabError,
    PermissionError_,
    WorkloadError,
    WorkloadSkipped,
)
from vnetbench.host.apply import KernelApplier
from vnetbench.host.cgroups import CgroupSet, NodeCgroup
from vnetbench.host.netns import read_in_netns
from vnetbench.host.node import Node
from vnetbench.host.processes import STOP_GRACE, ProcessTracker
from vnetbench.host.state import DISK_WORK_ROOT, STATE_DIR, RunState, allocate
from vnetbench.host.teardown import (
    delete_namespaces,
    kill_namespace_processes,
    remove_run_files,
)
from vnetbench.lab.placement import CpuPlacement, plan_placement
from vnetbench.lab.spec import LabSpec
from vnetbench.lab.topology import Names, Resources, Topology
from vnetbench.layers.base import AnyLayer, LayerOptions, ServiceMap
from vnetbench.signals import deferred, raise_pending, terminate_raises
from vnetbench.userpaths import trusted_dir

WORK_ROOT = STATE_DIR / "work"


@dataclass
class Lab:
    """A built virtual cluster; made by ``open_lab``."""

    plan: LabPlan
    state: RunState
    work_dir: Path
    backend: Backend
    placement: CpuPlacement = field(default_factory=lambda: CpuPlacement("off", ()))
    """Which CPUs nodes and daemons run on (the same rule for every layer)."""
    nodes: list[Node] = field(default_factory=list)
    build_seconds: float = 0.0
    infra_cgroup: NodeCgroup | None = None
    """Cgroup of the lab's own daemons (link emulator, wireguard-go, tunnel forwarders,
    Docker engines, QEMU): made by ``infra`` when first needed (a daemon starts, evidence
    is collected), so a lab without daemons that measures nothing never makes it."""
    tracker: ProcessTracker = field(init=False)
    _cgroups: CgroupSet = field(init=False)
    _applier: KernelApplier = field(init=False)
    _services: ServiceMap = field(init=False)
    _host_nodes: dict[int, HostNode] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.tracker = ProcessTracker(self.state)
        self._cgroups = CgroupSet(self.prefix)
        self._applier = KernelApplier(self.tracker, self.work_dir,
                                      daemon_cpus=self._daemon_cpus,
                                      daemon_cgroup_procs=lambda: self.infra().procs_files)
        self._services = self.layer.service_map(self.topo, self.options, self.plan.services)

    # ---- what the lab is ----------------------------------------------------------------
    @property
    def topo(self) -> Topology:
        return self.plan.topo

    @property
    def layer(self) -> AnyLayer:
        return self.plan.layer

    @property
    def options(self) -> LayerOptions:
        return self.plan.options

    @property
    def services(self) -> tuple[int, ...]:
        """Ports the workloads serve on (Docker publishes them when a container starts)."""
        return self.plan.services

    @property
    def run_id(self) -> str:
        return self.state.short_id

    @property
    def names(self) -> Names:
        return self.topo.names

    @property
    def prefix(self) -> str:
        return self.topo.names.prefix

    @property
    def sysctls(self) -> dict[str, dict[str, str]]:
        """Sysctls as set (or found) per namespace."""
        return self._applier.sysctls

    @property
    def placement_misses(self) -> list[str]:
        """Processes whose CPU affinity did not come out as placed (empty: placement held)."""
        return self.tracker.placement_misses

    def namespaces(self) -> list[str]:
        """The lab's namespaces: those it made, then those it attached (containers')."""
        return list(self.state.namespaces)

    def interfaces(self) -> dict[str, list[str]]:
        """Every interface in the lab's namespaces, per namespace (loopback excluded): the
        lab's own (named with its prefix) and, in Docker labs, those Docker made."""
        out: dict[str, list[str]] = {}
        for ns in self.namespaces():
            text = read_in_netns(ns, "net/dev")
            names = [line.split(":", 1)[0].strip() for line in text.splitlines()[2:]]
            out[ns] = [n for n in names if n != "lo"]
        return out

    def daemon_pids(self) -> dict[str, int]:
        """The PIDs of the daemons the plan started, by role (``wireguard-go h0``, ...)."""
        return {role: proc.pid for role, proc in self._applier.daemons.items()}

    def daemon_process(self, role: str) -> subprocess.Popen[bytes] | None:
        """The process of a daemon the plan started (``dockerd h0``, ...), if it was."""
        return self._applier.daemons.get(role)

    def daemon_logs(self) -> dict[str, str]:
        return {p.name: p.read_text(errors="replace") for p in self.work_dir.glob("*.log")}

    def backend_facts(self) -> dict[str, object]:
        """What the backend records in the run's fingerprint (Docker's engine, ...)."""
        return self.backend.facts()

    # ---- services -------------------------------------------------------------------
    def listen_port(self, node: Node, base_port: int) -> int:
        """The port a service of ``node`` should bind, given its usual port.

        Nodes sharing a namespace (``host`` layer) get distinct ports: base + slot.
        """
        if self.layer.shares_host_netns:
            return base_port + self.topo.slot_of(node.index)
        return base_port

    def endpoint(self, client: Node, server: Node, port: int,
                 proto: str = "tcp") -> tuple[str, int]:
        """Address and port at which ``client`` reaches ``server``'s service on ``port``
        (for ``nat`` a port published on the server's host, see ``Layer.service_map``; a
        host's own stack is reached directly at its underlay address)."""
        if isinstance(server, HostNode):
            return server.ip, port
        addr, published = self._services.endpoint(server, port, proto)
        if isinstance(client, HostNode):
            self._check_native_route(client, server, addr)
        return addr, published

    def _check_native_route(self, client: HostNode, server: Node, addr: str) -> None:
        """WorkloadSkipped when a host's own stack cannot reach ``addr``: no route (an
        overlay's nodes, as on a real Docker host, are reachable only from their network), or
        the node is a macvlan/ipvlan child of that host (its parent never talks to it)."""
        if server.host == client.host and not self.layer.host_reaches_own_nodes:
            raise WorkloadSkipped(
                f"on {self.layer.name} the host's own stack ({client.name}) cannot reach "
                f"{server.name}, a child of its own interface (as on a real host)")
        got = subprocess.run(["ip", "-n", client.netns or "", "route", "get", addr],
                             capture_output=True, text=True, check=False)
        if got.returncode != 0:
            raise WorkloadSkipped(
                f"the host's own stack ({client.name}) has no route to {server.name} at {addr} "
                f"on {self.layer.name} ({got.stderr.strip() or 'no route'})")

    def host_node(self, host: int) -> Node:
        """Emulated host ``host``'s own network stack as a node (``h<i>``), for a workload's
        native side; its processes are pinned as the host's daemons are."""
        if self.backend.host_kind != "netns":
            own = self.backend.host_node(host)
            if own is not None:
                return own
            what = "real machines" if self.backend.host_kind == "machine" else "virtual machines"
            raise WorkloadSkipped(f"the {self.layer.name} lab's hosts are {what}: a side on the "
                                  "host's own stack is not supported there")
        if not 0 <= host < self.topo.hosts:
            raise WorkloadError(f"no host {host} in a lab of {self.topo.hosts} host(s)")
        if host not in self._host_nodes:
            self._host_nodes[host] = HostNode(
                -1 - host, host, self.names.host_ns(host), self.topo.addresses.host_underlay(host),
                self.names.underlay(host), None, self.placement.for_host(host),
                tracker=self.tracker)
        return self._host_nodes[host]

    # ---- processes ------------------------------------------------------------------
    def claim_data_dir(self, path: Path) -> None:
        """Record ``path`` (about to be made for this run, outside its work directory) so
        ``vnetbench clean`` removes it after a killed run."""
        self.state.add_data_dir(path)

    def stop(self, proc: subprocess.Popen[bytes], grace: float = STOP_GRACE) -> int | None:
        """Stop a process a node spawned (SIGTERM, then SIGKILL after ``grace``)."""
        return self.tracker.stop(proc, grace)

    # ---- build ----------------------------------------------------------------------
    def build(self) -> None:
        start = time.monotonic()
        self.state.cgroup_prefix = self.prefix
        self.state.save()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.nodes = self.backend.realise(self._context())
        for node in self.nodes:
            node.cpus = self.placement.for_node(node.index)
        self.build_seconds = time.monotonic() - start

    def infra(self) -> NodeCgroup:
        """The cgroup of the lab's own daemons, made now if it is not yet."""
        if self.infra_cgroup is None:
            self.infra_cgroup = self._cgroups.create("infra", Resources())
        return self.infra_cgroup

    def _context(self) -> LabContext:
        return LabContext(plan=self.plan, state=self.state, work_dir=self.work_dir,
                          tracker=self.tracker, applier=self._applier, cgroups=self._cgroups,
                          placement=self.placement)

    def _daemon_cpus(self, netns: str) -> tuple[int, ...] | None:
        """A daemon runs on its emulated host's CPU; the switch's on any placed CPU."""
        for h in range(self.topo.hosts):
            if netns == self.names.host_ns(h):
                return self.placement.for_host(h)
        return self.placement.for_switch()

    # ---- teardown -------------------------------------------------------------------
    def teardown(self) -> list[str]:
        """Remove everything of this run; returns problems met (never raises)."""
        problems: list[str] = []
        daemons = {id(p) for p in self._applier.daemons.values()}
        # workload processes first (they may sit in containers' cgroups), then what the
        # backend made (containers and engines, guests), then the lab's own daemons
        problems += self.tracker.stop_all(lambda p: id(p) not in daemons)
        try:
            problems += self.backend.stop(self._context())
        except Exception as exc:
            problems.append(f"stopping the {self.backend.name} backend: {exc}")
        problems += self.tracker.stop_all()
        problems += kill_namespace_processes(self.state.namespaces)
        problems += self._cgroups.kill_all()
        problems += delete_namespaces(self.state.namespaces)
        problems += self._cgroups.remove()
        remove_run_files(self.state)
        return problems


def require_root() -> None:
    if os.geteuid() != 0:
        raise PermissionError_("vnetbench builds namespaces and links: run it as root (sudo)")


@contextmanager
def open_lab(spec: LabSpec, *, on_teardown_problem: Callable[[str], object] | None = None
             ) -> Iterator[Lab]:
    """Build the lab ``spec`` describes, yield it, and tear it down whatever happens
    (``on_teardown_problem``: told each problem teardown met; default: printed).

    The backend is the registry's for the spec (``spec_backend_class``); it refuses, before
    anything is built, a layer this host (or the machines' backend) cannot build, and
    prepares the lab's topology (emulated hosts here, or real machines it connects).
    """
    layer_obj = get_layer(spec.layer)
    cls = spec_backend_class(spec, layer_obj)
    if spec.machines:
        cls.check(layer_obj)
    if cls.needs_root:
        require_root()
    try:
        options = layer_obj.options.model_validate(dict(spec.layer_options))
    except Exception as exc:
        raise LabError(f"bad options for layer {spec.layer!r}: {exc}") from exc
    if not spec.machines:
        cls.check(layer_obj)
    if cls.needs_root:  # where runs keep what is too large for tmpfs: checked before use
        trusted_dir(DISK_WORK_ROOT, "vnetbench's disk work root")
    backend = cls()
    state = allocate(WORK_ROOT)
    lab: Lab | None = None
    try:
        with terminate_raises():
            topo, ctx = backend.prepare(spec, state, layer_obj)
            plan = make_plan(topo, layer_obj, options, ctx, seed=spec.seed,
                             services=spec.services, launches=spec.launches, backend=cls)
            lab = Lab(plan, state, Path(state.work_dir), backend,
                      placement=plan_placement(spec.placement,
                                               [topo.host_of(j) for j in range(spec.nodes)],
                                               spec.cpus))
            lab.build()
            yield lab
    finally:
        # a signal during teardown is recorded, not lost: acted on once teardown is done
        with deferred() as pending:
            if lab is not None:
                problems = lab.teardown()
            else:
                remove_run_files(state)
                problems = []
        for problem in problems:
            if on_teardown_problem:
                on_teardown_problem(problem)
            else:
                print(f"vnetbench: teardown: {problem}", file=sys.stderr)
        raise_pending(pending)
