"""``nat``: bridge + port publishing (``docker run -p``): DNAT in, MASQUERADE out.

Nodes sit on a per-host bridge as in ``bridge`` but their subnets are not routed between
hosts: a service is reached at its host's underlay address through a published port, which
``Lab.endpoint`` creates on demand (one DNAT rule per port and protocol in the host's
``vnb<id>-dnat`` chain). Outgoing traffic leaves through MASQUERADE. Traffic from a node to
a port published on its own host hairpins through the same DNAT and is masqueraded so the
reply comes back through conntrack.
"""

from __future__ import annotations

from vnetbench.layers.base import (
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


class NatOptions(BridgedOptions):
    first_port: int = 30000
    """First host port handed out when a service is published."""


def dnat_chain(topo: Topology) -> str:
    return f"{topo.names.prefix}-dnat"


class NatLayer(Layer):
    name = "nat"
    summary = "bridge + published port (docker run -p): DNAT and MASQUERADE"
    options = NatOptions
    publishes_ports = True

    def plan(
        self, topo: Topology, opts: LayerOptions, b: PlanBuilder, ctx: PlanContext
    ) -> list[NodePlacement]:
        assert isinstance(opts, NatOptions)
        plan_underlay(topo, b, forwarding=True)
        nodes = plan_bridged_nodes(topo, b, bridge_nf=opts.bridge_nf)
        chain = dnat_chain(topo)
        for i in range(topo.hosts):
            subnet, br = topo.addresses.host_subnet(i), topo.names.host_bridge(i)
            b.firewall[topo.names.host_ns(i)] += [
                "*nat",
                ":PREROUTING ACCEPT [0:0]",
                ":INPUT ACCEPT [0:0]",
                ":OUTPUT ACCEPT [0:0]",
                ":POSTROUTING ACCEPT [0:0]",
                f":{chain} - [0:0]",
                f"-A PREROUTING -m addrtype --dst-type LOCAL -j {chain}",
                f"-A OUTPUT ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j {chain}",
                f"-A POSTROUTING -s {subnet} ! -o {br} -j MASQUERADE",
                f"-A POSTROUTING -s {subnet} -o {br} -m conntrack --ctstate DNAT -j MASQUERADE",
                "COMMIT",
            ]
        return nodes
