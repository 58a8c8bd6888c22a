"""The ``vm`` backend: every node is a QEMU guest whose NIC sits on a TAP device where a
namespace node's veth would be, so the layer's bridges, tunnels, rules and shaping apply
to virtual machines unchanged (layers ``vm-<layer>``, see ``layers``).

Realising a lab: apply the kernel plan (it makes the TAPs, ``node_kind = "tap"``), then start
the guests (``fleet``). A node's vCPUs are its ``resources.cpus`` rounded up (at least 1),
its memory ``resources.memory`` (default 512 MiB); the CPU quota and cpuset apply to its
QEMU process, which sits in the node's cgroup (so the node's CPU cost is its guest's).

Honesty about speed: under TCG the guest's CPU is emulated, so its figures are not
comparable with KVM or native ones; ``facts()`` says so, the run records it per layer, and
the report does not star such a layer's ratios.
"""

from __future__ import annotations

import math

from vnetbench.backends.base import BackendPlan, LabContext
from vnetbench.backends.vm.fleet import (
    DEFAULT_MEMORY_MIB,
    FleetBackend,
    GuestPlan,
    VmPlan,
    disk_mib,
    guest_limits,
    guest_mac,
    with_disk,
)
from vnetbench.backends.vm.layers import VM_LAYERS
from vnetbench.backends.vm.node import GuestNode
from vnetbench.backends.vm.qemu import Nic
from vnetbench.errors import LabError
from vnetbench.host.node import Node
from vnetbench.lab.plan import Plan
from vnetbench.lab.topology import Resources, Topology
from vnetbench.layers.base import AnyLayer, LayerOptions, NodePlacement, PlanContext

NODE_SYSCTLS = ("net.ipv4.ip_forward=0", "net.ipv4.conf.all.rp_filter=0",
                "net.ipv4.conf.default.rp_filter=0")


def guest_size(resources: Resources) -> tuple[int, int]:
    """(vCPUs, memory in MiB) of a node's guest."""
    vcpus = max(1, math.ceil(resources.cpus)) if resources.cpus else 1
    memory = resources.memory // 2**20 if resources.memory else DEFAULT_MEMORY_MIB
    return vcpus, memory


def boot_commands(p: NodePlacement) -> tuple[tuple[str, ...], ...]:
    """The sysctls a node namespace gets and the node's own ``ip`` lines, as guest argv."""
    return (*(("sysctl", "-q", "-w", s) for s in NODE_SYSCTLS),
            *(("ip", *line.split()) for line in p.guest_lines))


class VmBackend(FleetBackend):
    """Nodes as QEMU guests on TAP devices."""

    name = "vm"
    node_kind = "tap"
    layers = VM_LAYERS

    @classmethod
    def check(cls, layer: AnyLayer) -> None:
        layer.check_supported()
        super().check(layer)

    @classmethod
    def plan(cls, topo: Topology, layer: AnyLayer, options: LayerOptions, ctx: PlanContext,
             placements: tuple[NodePlacement, ...], services: tuple[int, ...],
             kernel: Plan) -> BackendPlan:
        vcpus, memory = guest_size(topo.resources)
        disk = disk_mib(topo.resources)
        guests = []
        for p in placements:
            if p.tap is None:
                raise LabError(f"layer {layer.name}: node n{p.index} has no TAP for its guest")
            guests.append(GuestPlan(p.index, f"{topo.names.prefix}-v{p.index}", f"n{p.index}",
                                    p.netns, (Nic(p.tap, guest_mac(topo, 0, p.index), p.ifname),),
                                    vcpus, memory, with_disk(boot_commands(p), disk), disk))
        return VmPlan(tuple(guests))

    def realise(self, lab: LabContext) -> list[Node]:
        lab.apply_kernel_plan()
        plan = lab.plan.backend
        if not isinstance(plan, VmPlan):
            raise LabError("the vm backend was handed a plan of another backend")
        limits = guest_limits(lab.topo.resources)
        cgroups = {g.index: lab.cgroups.create(f"n{g.index}", limits) for g in plan.guests}
        guests = self.fleet.start(lab, plan.guests, lambda g: cgroups[g.index],
                                  lambda g: lab.placement.for_node(g.index))
        nodes: list[Node] = []
        for g, guest in zip(plan.guests, guests, strict=True):
            p = lab.plan.placements[g.index]
            nodes.append(GuestNode(p.index, p.host, None, p.ip, p.ifname, cgroups[g.index],
                                   guest=guest, tracker=lab.tracker))
        return nodes

