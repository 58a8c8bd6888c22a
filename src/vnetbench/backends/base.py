"""The backend interface: how the nodes of a planned lab are realised.

Every backend stands on the same underlay (the switch and the emulated hosts are network
namespaces, wired by the layer's kernel plan, applied with ``LabContext.apply_kernel_plan``).
A backend applies that plan and makes the nodes:

    netns   a namespace and cgroups per node (``backends/netns``)
    docker  a container per node, from one engine per emulated host (``backends/docker``)
    vm      a QEMU guest per node, its NIC on a TAP where a veth would be (``backends/vm``)

A backend is a class with:
- ``name`` and the layers it contributes (``layers``: Docker's modes, ``vm-<layer>``);
- ``check(layer)``: refuse, before anything is built, what this host cannot build;
- ``prepare(spec, state, layer)``: the lab's topology and the plan's context (emulated hosts
  here by default; real machines connect, check and equip theirs);
- ``dry_context(spec, layer)``: the same without building anything, for ``vnetbench plan``;
- ``node_kind``: what the layer's plan wires (``netns``: a veth into the node's namespace;
  ``tap``: a TAP for a virtual machine's NIC);
- ``plan(...)``: what it will do after the kernel plan, as a value (``BackendPlan``) that
  ``vnetbench plan`` prints and ``realise`` carries out;
- ``realise(lab)``: apply the kernel plan and make the nodes (``vnetbench.host.node.Node`` handles);
- ``facts()``: what the run's fingerprint should record about it;
- ``stop(lab)``: undo what ``realise`` did that the lab's generic teardown (tracked processes,
  namespaces, cgroups, files) does not undo; never raises, returns problems;
- ``clean_leftovers(state)``: the same for a run that was killed (``vnetbench clean``).

Optional capabilities (defaults do nothing): ``preflight(layer, options, hosts)`` checks
what the backend reaches (a cluster) once before a run's first trial; ``host_node(host)``
gives a host's own stack as a node where that is not a namespace here (a hostNetwork pod);
``collectors(nodes)`` reads the evidence where it is not on this kernel.

Adding a backend: a package under ``backends/`` with a ``Backend`` subclass, its name in
``backends/registry.py``, and (if it realises nodes on a layer's TAPs) nothing else: the
layers with ``supports_vm_nodes`` plan TAPs when ``node_kind`` is ``tap``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from vnetbench.collectors.base import Collector
from vnetbench.host.apply import KernelApplier
from vnetbench.host.cgroups import CgroupSet
from vnetbench.host.cleaned import CleanResult
from vnetbench.host.features import kernel_features
from vnetbench.host.node import Node
from vnetbench.host.processes import ProcessTracker
from vnetbench.host.state import RunState
from vnetbench.lab.placement import CpuPlacement
from vnetbench.lab.plan import Plan
from vnetbench.lab.spec import LabSpec
from vnetbench.lab.topology import Addresses, Names, Topology
from vnetbench.layers.base import AnyLayer, LayerOptions, NodeKind, NodePlacement, PlanContext


@dataclass(frozen=True)
class BackendPlan:
    """What a backend does after the kernel plan (nothing, for namespaces)."""

    def describe(self) -> list[str]:
        return []

    def describe_launcher(self) -> list[str]:
        """What the backend adds when a workload starts programs in other nodes from inside
        one (``LabPlan.launches``): nothing, where a workload joins the nodes itself."""
        return []


@dataclass(frozen=True)
class LabPlan:
    """Everything a lab will be, computed once (pure): ``vnetbench plan`` prints it and
    ``vnetbench.backends.lab`` builds it."""

    topo: Topology
    layer: AnyLayer
    options: LayerOptions
    kernel: Plan
    placements: tuple[NodePlacement, ...]
    backend: BackendPlan
    services: tuple[int, ...] = ()
    launches: bool = False
    """A workload starts programs in other nodes from inside one (``LabSpec.launches``)."""

    def render(self) -> str:
        lines = [self.kernel.render(), *self.backend.describe(),
                 *(self.backend.describe_launcher() if self.launches else []), "== nodes"]
        for p in self.placements:
            where = f"TAP {p.tap} in {p.netns}" if p.tap else f"netns {p.netns}"
            lines.append(f"    n{p.index}: host {p.host}, {where}, {p.ip} on {p.ifname}")
        r = self.topo.resources
        if r.any or r.disk:
            given = {k: v for k, v in (("cpus", r.cpus), ("memory", r.memory),
                                       ("cpuset", r.cpuset), ("disk", r.disk)) if v is not None}
            lines.append(f"== resources per node: {given}")
        return "\n".join(lines)


@dataclass
class LabContext:
    """What a backend works with while it realises and stops a lab's nodes."""

    plan: LabPlan
    state: RunState
    work_dir: Path
    tracker: ProcessTracker
    applier: KernelApplier
    cgroups: CgroupSet
    placement: CpuPlacement

    @property
    def topo(self) -> Topology:
        return self.plan.topo

    @property
    def sysctls(self) -> dict[str, dict[str, str]]:
        return self.applier.sysctls

    def apply_kernel_plan(self) -> None:
        """Claim the plan's namespaces (so teardown and clean remove them) and apply its
        kernel stages; LabError naming the failing stage."""
        self.record_namespaces(list(self.plan.kernel.namespaces))
        self.applier.apply(self.plan.kernel, self.plan.layer.name)

    def record_namespaces(self, names: list[str]) -> None:
        """Claim namespaces about to be attached (so teardown and clean remove them)."""
        self.state.namespaces += [n for n in names if n not in self.state.namespaces]
        self.state.save()


class Backend(ABC):
    """How nodes are realised (see the module docstring). One instance per lab."""

    name: ClassVar[str]
    node_kind: ClassVar[NodeKind] = "netns"
    host_kind: ClassVar[NodeKind] = "netns"
    """``tap``: each emulated host is a virtual machine; its part of the plan runs inside."""
    needs_root: ClassVar[bool] = True
    layers: ClassVar[tuple[type[AnyLayer], ...]] = ()
    """Layers this backend contributes to the catalogue (its own network modes)."""
    sessions: ClassVar[Literal["shared", "beside", "alone"]] = "alone"
    """How its labs live in a paired run's sessions (``run.design.session_groups``):
    ``shared``, any number alive together with the baseline's; ``beside``, one layer's lab at
    a time beside the baseline's two, in a session of its own (one engine per emulated host
    for every layer at once would not fit a small host); ``alone``, never alive beside
    another (a lab per trial: paired trial blocks)."""
    joinable: ClassVar[bool] = False
    """Its nodes are namespaces of this host that one client can join in turn (interleaved
    paths, ``run.interleave``)."""

    @classmethod
    def check(cls, layer: AnyLayer) -> None:
        """Refuse, before anything is built, a layer this host cannot build with this
        backend (UnsupportedError, MissingToolError with the fix)."""
        layer.check_supported()

    def prepare(self, spec: LabSpec, state: RunState, layer: AnyLayer) -> tuple[Topology, PlanContext]:
        """The topology of ``spec``'s lab (named and addressed as ``state`` allocated) and
        the context its plan is made in: emulated hosts on this kernel, the layer's tools
        resolved here and (for a backend that needs root) this kernel's features."""
        topo = Topology(hosts=spec.hosts, nodes=spec.nodes, names=Names(state.short_id),
                        addresses=Addresses(state.net), link=spec.link, resources=spec.resources)
        return topo, PlanContext(run_dir=Path(state.work_dir), tools=layer.resolve_tools(topo),
                                 features=kernel_features() if self.needs_root else {})

    @classmethod
    def dry_context(cls, spec: LabSpec, layer: AnyLayer, short_id: str, net: str
                    ) -> tuple[Topology, PlanContext]:
        """``prepare`` without building or reaching anything (``vnetbench plan``): the
        placeholder run ``short_id`` on address block ``net``."""
        topo = Topology(hosts=spec.hosts, nodes=spec.nodes, names=Names(short_id),
                        addresses=Addresses(net), link=spec.link, resources=spec.resources)
        return topo, PlanContext(run_dir=Path(f"/run/vnetbench/work/{short_id}"))

    @classmethod
    def plan(cls, topo: Topology, layer: AnyLayer, options: LayerOptions, ctx: PlanContext,
             placements: tuple[NodePlacement, ...], services: tuple[int, ...],
             kernel: Plan) -> BackendPlan:
        """What ``realise`` will do after the kernel plan (pure)."""
        return BackendPlan()

    @classmethod
    def local_kernel(cls, kernel: Plan, backend_plan: BackendPlan) -> Plan:
        """The part of the layer's kernel plan applied on this host (all of it, unless the
        backend carries parts elsewhere, e.g. into the guests that are the hosts)."""
        return kernel

    @abstractmethod
    def realise(self, lab: LabContext) -> list[Node]:
        """Apply ``lab.plan``'s kernel plan (``lab.apply_kernel_plan()``) and make its nodes."""

    def facts(self) -> dict[str, object]:
        """What the run's fingerprint records about this backend (empty: nothing)."""
        return {}

    @classmethod
    def preflight(cls, layer: AnyLayer, options: LayerOptions, hosts: int, *,
                  launches: bool = False) -> None:
        """Check, before a run's first trial, what this backend reaches beyond this host
        (UnsupportedError in one line); creates nothing. ``launches``: a workload will start
        programs in other nodes from inside one (``LabSpec.launches``)."""
        return None

    @classmethod
    def preflight_lab(cls, spec: LabSpec, layers: Sequence[tuple[AnyLayer, LayerOptions]],
                      *, launches: bool = False) -> None:
        """Check, before a run's first trial, what the labs of ``spec``'s layers (those this
        backend realises) need beyond this host: each layer's ``preflight`` by default (a
        backend that checks its hosts as a whole, real machines, does it at once)."""
        for layer, options in layers:
            cls.preflight(layer, options, spec.hosts, launches=launches)

    def host_node(self, host: int) -> Node | None:
        """Host ``host``'s own stack as a node, where it is not a namespace of this host
        (None: the backend has none to offer)."""
        return None

    def collectors(self, nodes: list[Node]) -> list[Collector] | None:
        """The evidence collectors of a lab whose counters are not on this kernel (None: the
        lab's namespaces here are read)."""
        return None

    def save_logs(self, raw_dir: Path) -> None:
        """Copy logs kept elsewhere (on real machines) into a trial's ``raw/`` directory."""
        return None

    def stop(self, lab: LabContext) -> list[str]:
        """Undo what ``realise`` did beyond processes, namespaces and cgroups; problems."""
        return []

    @classmethod
    def clean_leftovers(cls, state: RunState) -> CleanResult:
        """Remove what a killed run of this backend left beyond the generic leftovers: a line
        per thing removed, and per thing that could not be (called without ``clean``'s lock:
        it may reach machines or clusters over the network)."""
        return CleanResult()
