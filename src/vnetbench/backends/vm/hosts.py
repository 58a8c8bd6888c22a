"""The ``vmhost`` backend: every emulated host is a QEMU guest, and its nodes are network
namespaces inside it (containers in a VM, as in study 000's Fig. 8).

The layer is planned as usual with ``host_kind = "tap"``: each host's underlay wire is a TAP
on the switch bridge (in the switch namespace, where QEMU runs) instead of a veth into a host
namespace. The plan is then split: what touches the switch stays on this host; what touches
a host's namespace or its nodes' namespaces becomes that guest's boot commands, in plan
order (``ip``/``bridge`` lines, ``ip netns add``, sysctls). A layer whose host part needs
more than that (firewall rules, daemons) is refused when planned. Nodes are namespaces of
the guest (``GuestNode`` with ``inner_netns``), or the guest itself for ``vmhost-host``.
"""

from __future__ import annotations

from dataclasses import dataclass

from vnetbench.backends.base import BackendPlan, LabContext
from vnetbench.backends.vm.fleet import (
    FleetBackend,
    GuestPlan,
    VmPlan,
    disk_mib,
    guest_mac,
    per_node_mib,
    with_disk,
)
from vnetbench.backends.vm.layers import VMHOST_LAYERS
from vnetbench.backends.vm.node import GuestNode
from vnetbench.backends.vm.qemu import Nic
from vnetbench.errors import LabError
from vnetbench.host.node import Node
from vnetbench.lab.plan import Action, IpBatch, Plan, Stage, Sysctls
from vnetbench.lab.topology import Resources, Topology
from vnetbench.layers.base import AnyLayer, LayerOptions, NodePlacement, PlanContext

HOST_VCPUS = 1
HOST_MEMORY_MIB = 768
"""A host guest's memory, and what it gets besides its nodes' when they have a size."""


def host_memory_mib(resources: Resources, nodes: int) -> int:
    """A host guest's memory: ``HOST_MEMORY_MIB``, plus each of its ``nodes``'
    ``resources.memory`` when the scenario gives one (the nodes' share inside the VM; not
    enforced per namespace there)."""
    return HOST_MEMORY_MIB + per_node_mib(resources.memory, nodes)


@dataclass(frozen=True)
class VmHostPlan(VmPlan):
    """The guests that are the hosts, and the part of the kernel plan left on this host."""

    local: Plan | None = None


def guest_of(topo: Topology) -> dict[str, int]:
    """Namespace name -> the host whose guest holds it (host and node namespaces)."""
    owner = {topo.names.host_ns(i): i for i in range(topo.hosts)}
    owner |= {topo.names.node_ns(j): topo.host_of(j) for j in range(topo.nodes)}
    return owner


def split_plan(topo: Topology, layer: str, kernel: Plan
               ) -> tuple[Plan, dict[int, list[tuple[str, ...]]]]:
    """(the plan applied on this host, each guest's boot commands in plan order)."""
    owner = guest_of(topo)
    hosts = {topo.names.host_ns(i) for i in range(topo.hosts)}
    commands: dict[int, list[tuple[str, ...]]] = {i: [("modprobe", "-q", "br_netfilter")]
                                                  for i in range(topo.hosts)}
    stages: list[Stage] = []
    for stage in kernel.stages:
        local: list[Action] = []
        for action in stage.actions:
            if isinstance(action, IpBatch) and action.netns is None:
                keep = []
                for line in action.lines:
                    words = line.split()
                    ns = words[2] if words[:2] == ["netns", "add"] else None
                    if ns in hosts:
                        continue  # the guest's own namespace
                    if ns is not None and ns in owner:
                        commands[owner[ns]].append(("ip", *words))
                    else:
                        keep.append(line)
                if keep:
                    local.append(IpBatch(None, tuple(keep), action.tool))
                continue
            ns = getattr(action, "netns", None)
            if ns not in owner:
                local.append(action)
                continue
            inner = () if ns in hosts else ("ip", "netns", "exec", ns)
            if isinstance(action, IpBatch):
                target = () if ns in hosts else ("-n", ns)
                commands[owner[ns]] += [(action.tool, *target, *line.split())
                                        for line in action.lines]
            elif isinstance(action, Sysctls):
                commands[owner[ns]] += [(*inner, "sysctl", "-q", "-e", "-w", f"{k}={v}")
                                        for k, v in action.values]
            else:
                raise LabError(f"layer {layer}: {type(action).__name__} in {ns} cannot run "
                               "inside a VM host (vmhost layers take links, routes and sysctls)")
        stages.append(Stage(stage.title, tuple(local)))
    return Plan((topo.names.switch_ns,), tuple(stages)), commands


class VmHostBackend(FleetBackend):
    """Emulated hosts as QEMU guests; nodes as namespaces inside them."""

    name = "vmhost"
    host_kind = "tap"
    layers = VMHOST_LAYERS

    @classmethod
    def plan(cls, topo: Topology, layer: AnyLayer, options: LayerOptions, ctx: PlanContext,
             placements: tuple[NodePlacement, ...], services: tuple[int, ...],
             kernel: Plan) -> BackendPlan:
        local, commands = split_plan(topo, layer.name, kernel)
        n = topo.names
        inside = [sum(p.host == i for p in placements) for i in range(topo.hosts)]
        disks = [disk_mib(topo.resources, count) for count in inside]
        guests = tuple(
            GuestPlan(i, f"{n.prefix}-g{i}", f"h{i}", n.switch_ns,
                      (Nic(n.switch_port(i), guest_mac(topo, 1, i), n.underlay(i)),),
                      HOST_VCPUS, host_memory_mib(topo.resources, inside[i]),
                      with_disk(tuple(commands[i]), disks[i]), disks[i])
            for i in range(topo.hosts))
        return VmHostPlan(guests, local)

    @classmethod
    def local_kernel(cls, kernel: Plan, backend_plan: BackendPlan) -> Plan:
        if isinstance(backend_plan, VmHostPlan) and backend_plan.local is not None:
            return backend_plan.local
        return kernel

    def realise(self, lab: LabContext) -> list[Node]:
        lab.apply_kernel_plan()
        plan = lab.plan.backend
        if not isinstance(plan, VmHostPlan):
            raise LabError("the vmhost backend was handed a plan of another backend")
        cgroups = {g.index: lab.cgroups.create(f"h{g.index}", Resources()) for g in plan.guests}
        guests = self.fleet.start(lab, plan.guests, lambda g: cgroups[g.index],
                                  lambda g: lab.placement.for_host(g.index))
        hosts = {lab.topo.names.host_ns(i) for i in range(lab.topo.hosts)}
        nodes: list[Node] = []
        for p in lab.plan.placements:
            nodes.append(GuestNode(p.index, p.host, None, p.ip, p.ifname, cgroups[p.host],
                                   guest=guests[p.host], tracker=lab.tracker,
                                   inner_netns=None if p.netns in hosts else p.netns))
        return nodes

