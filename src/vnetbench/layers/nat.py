"""``nat``: bridge + port publishing (``docker run -p``): DNAT in, MASQUERADE out.

Nodes sit on a per-host bridge as in ``bridge`` but their subnets are not routed between
hosts: a service is reached at its host's underlay address through a published port, which
``PublishedPorts.endpoint`` creates on demand (as ``Lab.endpoint``) (one DNAT rule per port and protocol in the host's
``vnb<id>-dnat`` chain). Outgoing traffic leaves through MASQUERADE. Traffic from a node to
a port published on its own host hairpins through the same DNAT and is masqueraded so the
reply comes back through conntrack.
"""

from __future__ import annotations

import threading

from vnetbench.host import kernel
from vnetbench.host.node import Node
from vnetbench.lab.plan import PlanBuilder
from vnetbench.lab.topology import Topology
from vnetbench.layers.base import (
    BridgedOptions,
    Layer,
    NodePlacement,
    PlanContext,
    ServiceMap,
    plan_bridged_nodes,
    plan_underlay,
    port_field,
)


class NatOptions(BridgedOptions):
    first_port: int = port_field(30000)
    """First host port handed out when a service is published (a node's service is
    published at its own port when that is free on its host, else at the next free one from
    here; ``scenario.check_capacity`` checks they all stay within 65535)."""

    def first_published_port(self) -> int | None:
        return self.first_port


def dnat_chain(topo: Topology) -> str:
    return f"{topo.names.prefix}-dnat"


class PublishedPorts(ServiceMap):
    """Ports published on the servers' hosts on first use: one DNAT rule per server port
    and protocol; a client connects to the host's underlay address, as a client of
    ``docker run -p`` would."""

    def __init__(self, topo: Topology, opts: NatOptions) -> None:
        self.topo = topo
        self.first_port = opts.first_port
        self._published: dict[tuple[int, int, str], int] = {}
        self._lock = threading.Lock()

    def endpoint(self, server: Node, port: int, proto: str = "tcp") -> tuple[str, int]:
        host_ip = self.topo.addresses.host_underlay(server.host)
        published = 0
        for p in ("tcp", "udp") if proto == "tcp+udp" else (proto,):
            published = self._publish(server, port, p)
        return host_ip, published

    def _publish(self, server: Node, port: int, proto: str) -> int:
        with self._lock:
            key = (server.index, port, proto)
            if key in self._published:
                return self._published[key]
            used = {hp for (idx, _, pr), hp in self._published.items()
                    if self.topo.host_of(idx) == server.host and pr == proto}
            host_port = port if port not in used else self.first_port
            while host_port in used:
                host_port += 1
            host_ip = self.topo.addresses.host_underlay(server.host)
            kernel.run_in(self.topo.names.host_ns(server.host), [
                "iptables", "-t", "nat", "-A", dnat_chain(self.topo), "-d", host_ip, "-p", proto,
                "--dport", str(host_port), "-j", "DNAT", "--to-destination",
                f"{server.ip}:{port}",
            ])
            self._published[key] = host_port
            return host_port


class NatLayer(Layer[NatOptions]):
    name = "nat"
    supports_vm_nodes = True
    summary = "bridge + published port (docker run -p): DNAT and MASQUERADE"
    options = NatOptions
    publishes_ports = True

    def plan(
        self, topo: Topology, opts: NatOptions, b: PlanBuilder, ctx: PlanContext
    ) -> list[NodePlacement]:
        plan_underlay(topo, b, forwarding=True, ctx=ctx)
        nodes = plan_bridged_nodes(topo, b, bridge_nf=opts.bridge_nf, ctx=ctx)
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

    def service_map(self, topo: Topology, opts: NatOptions,
                    services: tuple[int, ...]) -> ServiceMap:
        return PublishedPorts(topo, opts)
