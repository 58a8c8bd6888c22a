"""``vxlan``: one flat L2 overlay across hosts (Docker overlay, Flannel VXLAN).

Each host has a bridge holding its nodes' veths and a VXLAN device over its underlay
interface; the VXLAN devices flood unknown destinations to every peer host (head-end
replication: an all-zero FDB entry per peer) and learn the rest. All nodes share the
overlay subnet. MTU: underlay MTU minus the 50-byte VXLAN header on the VXLAN device, the
bridge and every node interface, as Docker sets it.
"""

from __future__ import annotations

from vnetbench.layers.base import (
    VXLAN_OVERHEAD,
    BridgedOptions,
    Layer,
    LayerOptions,
    NodePlacement,
    PlanContext,
    plan_bridged_nodes,
    plan_underlay,
)
from vnetbench.plan import PlanBuilder
from vnetbench.topology import Topology


class VxlanOptions(BridgedOptions):
    vni: int = 4242
    """VXLAN network identifier of the overlay."""
    port: int = 4789
    """UDP destination port of the VXLAN packets (4789 is IANA's)."""
    underlay_mtu: int = 1500
    """MTU of the underlay; the nodes get this minus the VXLAN overhead (50 bytes)."""


class VxlanLayer(Layer):
    name = "vxlan"
    supports_vm_nodes = True
    summary = "per-host bridge + VXLAN device over the underlay (Docker overlay, Flannel)"
    between_hosts = "the VXLAN overlay"
    options = VxlanOptions
    requires = ("vxlan",)

    def plan(
        self, topo: Topology, opts: LayerOptions, b: PlanBuilder, ctx: PlanContext
    ) -> list[NodePlacement]:
        assert isinstance(opts, VxlanOptions)
        plan_underlay(topo, b, forwarding=False, ctx=ctx)
        mtu = opts.underlay_mtu - VXLAN_OVERHEAD
        nodes = plan_bridged_nodes(
            topo, b, bridge_nf=opts.bridge_nf, mtu=mtu, overlay=True, bridge_ip=False,
            other_ports=1, ctx=ctx)
        n, a = topo.names, topo.addresses
        for i in range(topo.hosts):
            host, vx = n.host_ns(i), n.vxlan(i)
            b.host_lines[host] += [
                f"link add {vx} mtu {mtu} type vxlan id {opts.vni} local {a.host_underlay(i)} "
                f"dev {n.underlay(i)} dstport {opts.port}",
                f"link set {vx} master {n.host_bridge(i)}",
                f"link set {vx} up",
            ]
            b.bridge_lines[host] += [
                f"fdb append 00:00:00:00:00:00 dev {vx} dst {a.host_underlay(k)}"
                for k in range(topo.hosts)
                if k != i
            ]
        return nodes
