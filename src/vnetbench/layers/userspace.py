"""``userspace``: host-to-host traffic encapsulated in UDP by a userspace forwarder (Weave
sleeve, flannel-udp): the cost of a datapath that leaves the kernel for every packet.

Nodes sit on per-host bridges as in ``bridge``; each host runs ``vnetbench-tunnel``, which
reads packets for other hosts' node subnets from a tun device, sends each as one UDP
datagram to the peer host's forwarder over the underlay, and writes what it receives back
into its tun. Node MTU leaves room for the 28-byte IP+UDP header. The forwarder's counters
(stats file, ``end`` event) prove that traffic went through it.
"""

from __future__ import annotations

from vnetbench.lab.plan import Daemon, PlanBuilder
from vnetbench.lab.topology import Topology
from vnetbench.layers.base import (
    UDP_ENCAP_OVERHEAD,
    BridgedOptions,
    Layer,
    NodePlacement,
    PlanContext,
    peer_subnet_routes,
    plan_bridged_nodes,
    plan_underlay,
    port_field,
    underlay_mtu_field,
)
from vnetbench.layers.programs import TUNNEL


class UserspaceOptions(BridgedOptions):
    port: int = port_field(8285)
    """UDP port the userspace tunnel daemons exchange encapsulated frames on."""
    underlay_mtu: int = underlay_mtu_field(UDP_ENCAP_OVERHEAD)
    """MTU of the underlay; the nodes get this minus the encapsulation overhead (28 bytes)."""

    def tunnel_underlay_mtu(self) -> int | None:
        return self.underlay_mtu


def tunnel_stats_file(ctx: PlanContext, host: int) -> str:
    return str(ctx.run_dir / f"tunnel{host}.json")


class UserspaceLayer(Layer[UserspaceOptions]):
    name = "userspace"
    supports_vm_nodes = True
    summary = "bridge per host; UDP encapsulation by a userspace forwarder over tun (Weave sleeve)"
    between_hosts = "the userspace forwarder's UDP encapsulation"
    options = UserspaceOptions
    requires = ("tun",)
    programs = (TUNNEL,)

    def plan(
        self, topo: Topology, opts: UserspaceOptions, b: PlanBuilder, ctx: PlanContext
    ) -> list[NodePlacement]:
        plan_underlay(topo, b, forwarding=True, ctx=ctx)
        mtu = opts.underlay_mtu - UDP_ENCAP_OVERHEAD
        nodes = plan_bridged_nodes(topo, b, bridge_nf=opts.bridge_nf, mtu=mtu, ctx=ctx)
        n, a = topo.names, topo.addresses
        for i in range(topo.hosts):
            dev = n.tun(i)
            argv = [ctx.tool("vnetbench-tunnel"), "--tun", dev, "--listen",
                    f"{a.host_underlay(i)}:{opts.port}", "--mtu", str(mtu),
                    "--stats-file", tunnel_stats_file(ctx, i)]
            for k in range(topo.hosts):
                if k != i:
                    argv += ["--route", f"{a.host_subnet(k)}={a.host_underlay(k)}:{opts.port}"]
            b.daemons.append(Daemon(
                netns=n.host_ns(i), role=f"tunnel {dev}", argv=tuple(argv), ready="stdout",
                then=(f"link set {dev} mtu {mtu} up", *peer_subnet_routes(topo, i, dev)),
            ))
        return nodes
