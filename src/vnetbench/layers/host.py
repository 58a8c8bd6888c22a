"""``host``: nodes run in their host's own namespace (Docker ``--network host``), the baseline.

No virtual device stands between a node's process and the host's underlay interface; every
report compares the other layers against this one. Nodes that share a host share its
address, so their services listen on distinct ports (``Lab.listen_port``).
"""

from __future__ import annotations

from vnetbench.lab.plan import PlanBuilder
from vnetbench.lab.topology import Topology
from vnetbench.layers.base import Layer, LayerOptions, NodePlacement, PlanContext, plan_underlay


class HostLayer(Layer[LayerOptions]):
    name = "host"
    summary = "native: processes in the host's namespace (docker --network host)"
    shares_host_netns = True

    def plan(
        self, topo: Topology, opts: LayerOptions, b: PlanBuilder, ctx: PlanContext
    ) -> list[NodePlacement]:
        plan_underlay(topo, b, forwarding=False, ctx=ctx)
        n, a = topo.names, topo.addresses
        return [
            NodePlacement(j, topo.host_of(j), n.host_ns(topo.host_of(j)),
                          a.host_underlay(topo.host_of(j)), n.underlay(topo.host_of(j)))
            for j in range(topo.nodes)
        ]
