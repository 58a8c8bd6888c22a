"""``bridge``: a veth per node into a per-host Linux bridge (Docker's docker0).

Same-host traffic is switched by the bridge; cross-host traffic is routed by the hosts
between their bridge subnets over the underlay, without encapsulation. By default bridged
IPv4 passes through iptables/conntrack (br_netfilter), as on a host running Docker.
"""

from __future__ import annotations

from vnetbench.lab.plan import PlanBuilder
from vnetbench.lab.topology import Topology
from vnetbench.layers.base import (
    BridgedOptions,
    Layer,
    NodePlacement,
    PlanContext,
    plan_bridged_nodes,
    plan_underlay,
    route_host_subnets_via_underlay,
)


class BridgeLayer(Layer[BridgedOptions]):
    name = "bridge"
    supports_vm_nodes = True
    summary = "veth into a per-host Linux bridge (docker0), routed between hosts"
    options = BridgedOptions

    def plan(
        self, topo: Topology, opts: BridgedOptions, b: PlanBuilder, ctx: PlanContext
    ) -> list[NodePlacement]:
        plan_underlay(topo, b, forwarding=True, ctx=ctx)
        nodes = plan_bridged_nodes(topo, b, bridge_nf=opts.bridge_nf, ctx=ctx)
        route_host_subnets_via_underlay(topo, b)
        return nodes
