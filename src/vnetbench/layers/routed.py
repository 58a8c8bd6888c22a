"""``routed``: Calico-style pure L3: a veth per node, no bridge, /32 routes, proxy ARP.

The node has a /32 address and a default route via 169.254.1.1 on its veth; the host side
of the veth answers ARP for it (proxy_arp, proxy_delay 0) and the host holds a /32 route per
node. Hosts route each other's node subnets over the underlay, without encapsulation.
Proxy ARP only answers when the host has a route to the gateway address through another
interface, so each host routes 169.254.1.1 to its underlay.
"""

from __future__ import annotations

from vnetbench.lab.plan import PlanBuilder
from vnetbench.lab.topology import Topology
from vnetbench.layers.base import (
    Layer,
    LayerOptions,
    NodePlacement,
    PlanContext,
    node_link,
    plan_node_namespaces,
    plan_underlay,
    route_host_subnets_via_underlay,
)

GATEWAY = "169.254.1.1"


class RoutedLayer(Layer[LayerOptions]):
    name = "routed"
    supports_vm_nodes = True
    summary = "Calico-like: veth per node, /32 routes + proxy ARP, plain routing between hosts"

    def plan(
        self, topo: Topology, opts: LayerOptions, b: PlanBuilder, ctx: PlanContext
    ) -> list[NodePlacement]:
        plan_underlay(topo, b, forwarding=True, ctx=ctx)
        plan_node_namespaces(topo, b, ctx)
        n, a = topo.names, topo.addresses
        placements = []
        for i in range(topo.hosts):
            host = n.host_ns(i)
            b.host_lines[host].append(f"route add {GATEWAY}/32 dev {n.underlay(i)}")
            for j in topo.node_ids_on(i):
                ip, veth, node_if = a.subnet_node(i, topo.slot_of(j)), n.veth_host(j), n.node_if(j)
                placements.append(node_link(
                    topo, b, ctx, j, ip=ip,
                    host_lines=[f"link set {veth} up", f"route add {ip}/32 dev {veth}"],
                    node_lines=[f"addr add {ip}/32 dev {node_if}", f"link set {node_if} up",
                                f"route add {GATEWAY} dev {node_if} scope link",
                                f"route add default via {GATEWAY} dev {node_if}"]))
                b.sysctl(host, f"net.ipv4.conf.{veth}.proxy_arp", 1, late=True)
                b.sysctl(host, f"net.ipv4.neigh.{veth}.proxy_delay", 0, late=True)
        route_host_subnets_via_underlay(topo, b)
        return sorted(placements, key=lambda p: p.index)
