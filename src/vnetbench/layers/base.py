"""What every network layer shares: its contract, the underlay, and the wiring helpers.

A layer is a class with a ``name``, an options model and ``plan(topology, options, builder,
context)`` that adds its kernel objects to a ``PlanBuilder`` and returns where each node
lives (namespace, address, interface). Layers never touch the kernel themselves.

``plan_underlay`` builds what all layers stand on: the switch namespace with its bridge and
one veth "wire" per emulated host, each host's underlay address, and the sysctls every lab
namespace gets explicitly (IPv6 off so no background packets pollute counters; rp_filter
off; forwarding as the layer needs; bridge-nf-call-* as the layer says).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from vnetbench.plan import PlanBuilder
from vnetbench.topology import Topology

VXLAN_OVERHEAD = 50
WIREGUARD_OVERHEAD = 80
UDP_ENCAP_OVERHEAD = 28


class LayerOptions(BaseModel):
    """Options every layer accepts; layers subclass this with their own keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class BridgedOptions(LayerOptions):
    """Options of layers whose nodes hang off a per-host Linux bridge (as docker0 does)."""

    bridge_nf: bool = True
    """Pass bridged IPv4 through iptables/conntrack (br_netfilter), as Docker's bridges do."""


@dataclass(frozen=True)
class NodePlacement:
    """Where node ``index`` lives once the lab is built."""

    index: int
    host: int
    netns: str
    ip: str
    ifname: str


@dataclass(frozen=True)
class PlanContext:
    """What a plan may depend on besides the topology: tools and kernel facts."""

    run_dir: Path
    tools: dict[str, str] = field(default_factory=dict)
    features: dict[str, bool] = field(default_factory=dict)

    def tool(self, name: str) -> str:
        return self.tools.get(name, name)


class Layer:
    """Base class of network layers (subclasses set the class variables and ``plan``)."""

    name: ClassVar[str]
    summary: ClassVar[str]
    options: ClassVar[type[LayerOptions]] = LayerOptions
    requires: ClassVar[tuple[str, ...]] = ()
    """Kernel features (keys of ``vnetbench.features``) without which the layer cannot work."""
    tools: ClassVar[tuple[str, ...]] = ()
    """Programs the layer runs (keys resolved by the lab before planning)."""
    publishes_ports: ClassVar[bool] = False
    """Services are reached at the host's address through a published port (NAT)."""
    shares_host_netns: ClassVar[bool] = False
    backend: ClassVar[str] = "netns"
    """How nodes are realised: ``netns`` (namespaces the lab makes) or ``docker`` (containers
    of engines the lab starts, see ``vnetbench.backends.docker``)."""

    def plan(
        self, topo: Topology, opts: LayerOptions, b: PlanBuilder, ctx: PlanContext
    ) -> list[NodePlacement]:
        raise NotImplementedError


def plan_underlay(topo: Topology, b: PlanBuilder, *, forwarding: bool) -> None:
    """Switch namespace + bridge, one wire per host, host addresses, base sysctls."""
    n, a = topo.names, topo.addresses
    b.add_namespace(n.switch_ns)
    for i in range(topo.hosts):
        b.add_namespace(n.host_ns(i))
    sw = n.switch_ns
    b.switch_lines[sw] += [
        "link set lo up",
        f"link add {n.switch_bridge} type bridge stp_state 0 mcast_snooping 0",
        f"link set {n.switch_bridge} up",
    ]
    base_sysctls(b, sw, forwarding=False, bridge_nf=topo.link.needs_emulator)
    for i in range(topo.hosts):
        host = n.host_ns(i)
        b.switch_lines[sw] += [
            f"link add {n.switch_port(i)} type veth peer name {n.underlay(i)} netns {host}",
            f"link set {n.switch_port(i)} master {n.switch_bridge}",
            f"link set {n.switch_port(i)} up",
        ]
        b.host_lines[host] += [
            "link set lo up",
            f"link set {n.underlay(i)} up",
            f"addr add {a.host_underlay(i)}/{a.underlay_prefix} dev {n.underlay(i)}",
        ]
        base_sysctls(b, host, forwarding=forwarding, bridge_nf=False)


def base_sysctls(b: PlanBuilder, netns: str, *, forwarding: bool, bridge_nf: bool) -> None:
    """The sysctls every lab namespace gets, set explicitly rather than inherited."""
    b.sysctl(netns, "net.ipv6.conf.all.disable_ipv6", 1)
    b.sysctl(netns, "net.ipv6.conf.default.disable_ipv6", 1)
    b.sysctl(netns, "net.ipv4.ip_forward", 1 if forwarding else 0)
    b.sysctl(netns, "net.ipv4.conf.all.rp_filter", 0)
    b.sysctl(netns, "net.ipv4.conf.default.rp_filter", 0)
    set_bridge_nf(b, netns, bridge_nf)


def set_bridge_nf(b: PlanBuilder, netns: str, enabled: bool) -> None:
    """bridge-nf-call-*: whether bridged frames traverse iptables in this namespace."""
    b.sysctl(netns, "net.bridge.bridge-nf-call-iptables", 1 if enabled else 0)
    b.sysctl(netns, "net.bridge.bridge-nf-call-ip6tables", 0)
    b.sysctl(netns, "net.bridge.bridge-nf-call-arptables", 0)


def plan_node_namespaces(topo: Topology, b: PlanBuilder) -> None:
    """One namespace per node, loopback up, base sysctls."""
    for j in range(topo.nodes):
        ns = topo.names.node_ns(j)
        b.add_namespace(ns)
        b.node_lines[ns].append("link set lo up")
        base_sysctls(b, ns, forwarding=False, bridge_nf=False)


def plan_bridged_nodes(
    topo: Topology,
    b: PlanBuilder,
    *,
    bridge_nf: bool,
    mtu: int = 1500,
    overlay: bool = False,
    bridge_ip: bool = True,
) -> list[NodePlacement]:
    """Per-host bridge with one veth per node (docker0 style); returns the placements.

    ``overlay`` puts all nodes in the flat overlay subnet (VXLAN) instead of per-host subnets.
    """
    n, a = topo.names, topo.addresses
    plan_node_namespaces(topo, b)
    placements = []
    for i in range(topo.hosts):
        host, br = n.host_ns(i), n.host_bridge(i)
        b.host_lines[host] += [f"link add {br} mtu {mtu} type bridge stp_state 0", f"link set {br} up"]
        if bridge_ip:
            b.host_lines[host].append(f"addr add {a.host_gateway(i)}/24 dev {br}")
        set_bridge_nf(b, host, bridge_nf)
        for j in topo.node_ids_on(i):
            node_ns, slot = n.node_ns(j), topo.slot_of(j)
            ip, plen = (a.overlay_node(j), 17) if overlay else (a.subnet_node(i, slot), 24)
            b.host_lines[host] += [
                f"link add {n.veth_host(j)} mtu {mtu} type veth peer name {n.node_if(j)} "
                f"mtu {mtu} netns {node_ns}",
                f"link set {n.veth_host(j)} master {br}",
                f"link set {n.veth_host(j)} up",
            ]
            b.node_lines[node_ns] += [
                f"addr add {ip}/{plen} dev {n.node_if(j)}",
                f"link set {n.node_if(j)} up",
            ]
            if bridge_ip and not overlay:
                b.node_lines[node_ns].append(f"route add default via {a.host_gateway(i)}")
            placements.append(NodePlacement(j, i, node_ns, ip, n.node_if(j)))
    return sorted(placements, key=lambda p: p.index)


def route_host_subnets_via_underlay(topo: Topology, b: PlanBuilder) -> None:
    """On each host, a route to every other host's node subnet via that host (no tunnel)."""
    a = topo.addresses
    for i in range(topo.hosts):
        for k in range(topo.hosts):
            if k != i:
                b.host_lines[topo.names.host_ns(i)].append(
                    f"route add {a.host_subnet(k)} via {a.host_underlay(k)}"
                )


def peer_subnet_routes(topo: Topology, i: int, dev: str) -> list[str]:
    """``ip`` lines routing every other host's node subnet into a tunnel device of host i."""
    a = topo.addresses
    return [f"route add {a.host_subnet(k)} dev {dev}" for k in range(topo.hosts) if k != i]
