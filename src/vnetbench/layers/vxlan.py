"""``vxlan``: one flat L2 overlay across hosts (Docker overlay, Flannel VXLAN).

Each host has a bridge holding its nodes' veths and a VXLAN device over its underlay
interface; the VXLAN devices flood unknown destinations to every peer host (head-end
replication: an all-zero FDB entry per peer) and learn the rest. All nodes share the
overlay subnet. MTU: underlay MTU minus the 50-byte VXLAN header on the VXLAN device, the
bridge and every node interface, as Docker sets it.
"""

from __future__ import annotations

from pydantic import Field

from vnetbench.lab.plan import PlanBuilder
from vnetbench.lab.topology import Topology
from vnetbench.layers.base import (
    VXLAN_OVERHEAD,
    BridgedOptions,
    Layer,
    NodePlacement,
    PlanContext,
    plan_bridged_nodes,
    plan_underlay,
    port_field,
    underlay_mtu_field,
)

MAX_VNI = 2**24 - 1
"""The largest VXLAN network identifier (a 24-bit field; the kernel refuses 16777216)."""


class VxlanOptions(BridgedOptions):
    vni: int = Field(4242, ge=0, le=MAX_VNI)
    """VXLAN network identifier of the overlay (24 bits: 0 to 16777215)."""
    port: int = port_field(4789)
    """UDP destination port of the VXLAN packets (4789 is IANA's)."""
    underlay_mtu: int = underlay_mtu_field(VXLAN_OVERHEAD)
    """MTU of the underlay; the nodes get this minus the VXLAN overhead (50 bytes)."""

    def tunnel_underlay_mtu(self) -> int | None:
        return self.underlay_mtu


class VxlanLayer(Layer[VxlanOptions]):
    name = "vxlan"
    supports_vm_nodes = True
    summary = "per-host bridge + VXLAN device over the underlay (Docker overlay, Flannel)"
    between_hosts = "the VXLAN overlay"
    options = VxlanOptions
    requires = ("vxlan",)

    def plan(
        self, topo: Topology, opts: VxlanOptions, b: PlanBuilder, ctx: PlanContext
    ) -> list[NodePlacement]:
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
