"""``macvlan`` and ``ipvlan``: node interfaces stacked directly on the host's underlay ("direct").

Each node gets a macvlan (bridge mode) or ipvlan (L2 mode) child of its host's underlay
interface and an address on the underlay segment itself; no bridge, no routing, no NAT.
Nodes on one host talk through the parent's internal switching; across hosts, over the
wire. ``ipvlan`` needs a kernel with ipvlan (``vnetbench doctor`` says whether it has one).
"""

from __future__ import annotations

from typing import ClassVar

from vnetbench.lab.plan import PlanBuilder
from vnetbench.lab.topology import Topology
from vnetbench.layers.base import (
    Layer,
    LayerOptions,
    NodePlacement,
    PlanContext,
    plan_node_namespaces,
    plan_underlay,
)


def plan_direct(topo: Topology, b: PlanBuilder, link_type: str,
                ctx: PlanContext | None = None) -> list[NodePlacement]:
    plan_underlay(topo, b, forwarding=False, ctx=ctx)
    plan_node_namespaces(topo, b)
    n, a = topo.names, topo.addresses
    placements = []
    for j in range(topo.nodes):
        i, slot = topo.host_of(j), topo.slot_of(j)
        ns, ip = n.node_ns(j), a.direct_node(i, slot)
        # made straight in the node's namespace: moving a link costs an RCU grace period
        b.host_lines[n.host_ns(i)].append(
            f"link add {n.node_if(j)} link {n.underlay(i)} netns {ns} type {link_type}")
        b.node_lines[ns] += [
            f"addr add {ip}/{a.underlay_prefix} dev {n.node_if(j)}",
            f"link set {n.node_if(j)} up",
        ]
        placements.append(NodePlacement(j, i, ns, ip, n.node_if(j)))
    return placements


class DirectLayer(Layer[LayerOptions]):
    """A node interface stacked on the host's underlay: ``link_type`` says which."""

    link_type: ClassVar[str]
    host_reaches_own_nodes = False

    def plan(
        self, topo: Topology, opts: LayerOptions, b: PlanBuilder, ctx: PlanContext
    ) -> list[NodePlacement]:
        return plan_direct(topo, b, self.link_type, ctx)


class MacvlanLayer(DirectLayer):
    name = "macvlan"
    summary = "macvlan children (bridge mode) of the host's underlay interface"
    requires = ("macvlan",)
    link_type = "macvlan mode bridge"


class IpvlanLayer(DirectLayer):
    name = "ipvlan"
    summary = "ipvlan children (L2 mode) of the host's underlay interface"
    requires = ("ipvlan",)
    link_type = "ipvlan mode l2"
