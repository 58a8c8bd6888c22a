"""What every network layer shares: its contract, the underlay, and the wiring helpers.

A layer is a class with a ``name``, an options model and ``plan(topology, options, builder,
context)`` that adds its kernel objects to a ``PlanBuilder`` and returns where each node
lives (namespace, address, interface). Layers never touch the kernel while planning. What is
particular to a layer lives in its class too: the programs it needs (``programs``,
``resolve_tools``), what must be available before anything is built (``check_supported``)
and how a client reaches a server's service (``service_map``: directly, or through a port
the layer publishes, as ``nat`` does).

Adding a layer: one module in ``layers/`` with the class (and its options model, if any),
then its name in ``layers/registry.py``; ``tests/unit/test_plans.py`` plans every registered
layer. A layer whose nodes hang off a per-host device (``node_link``) can also carry virtual
machines: set ``supports_vm_nodes`` and add its ``vm-<name>`` class (two lines) in
``backends/vm/layers.py``; a test fails until both are there.

``plan_underlay`` builds what all layers stand on: the switch namespace with its bridge and
one veth "wire" per emulated host, each host's underlay address, and the sysctls every lab
namespace gets explicitly (IPv6 off so no background packets pollute counters; rp_filter
off; forwarding as the layer needs; bridge-nf-call-* as the layer says).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from vnetbench.errors import UnsupportedError
from vnetbench.host.features import FEATURE_ADVICE, kernel_features
from vnetbench.host.node import Node
from vnetbench.host.programs import Program
from vnetbench.lab.plan import PlanBuilder
from vnetbench.lab.topology import Topology
from vnetbench.layers.programs import LINKEM

VXLAN_OVERHEAD = 50
MIN_MTU = 68
"""The smallest MTU of an IPv4 interface (RFC 791): the kernel's floor for every device a
layer makes (veth, bridge, vxlan, tun: ``mtu 67`` is "less than device minimum")."""
MAX_MTU = 65535
"""The largest MTU the kernel takes for veth and bridge devices (ETH_MAX_MTU; ``mtu 65536``
is "greater than device maximum"), and the largest IPv4 packet."""
EMULATED_UNDERLAY_MTU = 1500
"""The MTU of an emulated host's underlay (a veth's default, which ``plan_underlay`` keeps):
an overlay sized for more would have its tunnel device clamped below its bridge's MTU."""
MAX_PORT = 65535
"""The largest TCP/UDP port."""
BRIDGE_MAX_PORTS = 1023
"""Ports a Linux bridge takes (port numbers 1..1023, BR_MAX_PORTS in the kernel)."""
WIREGUARD_OVERHEAD = 80
UDP_ENCAP_OVERHEAD = 28


class LayerOptions(BaseModel):
    """Options every layer accepts; layers subclass this with their own keys, and answer the
    questions a scenario's checks ask of every layer (``tunnel_underlay_mtu``,
    ``first_published_port``) where their keys change the answer."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    def tunnel_underlay_mtu(self) -> int | None:
        """The underlay MTU the layer's tunnel is sized for (None: it has no tunnel)."""
        return None

    def first_published_port(self) -> int | None:
        """The first host port the layer publishes services on (None: it publishes none)."""
        return None


def port_field(default: int) -> Any:
    """A UDP/TCP port option: 1 to 65535 (the pydantic field, typed Any as ``Field`` is)."""
    return Field(default, ge=1, le=MAX_PORT)


def underlay_mtu_field(overhead: int) -> Any:
    """An ``underlay_mtu`` option of a layer whose tunnel adds ``overhead`` bytes: the nodes
    get ``underlay_mtu - overhead``, so at least ``MIN_MTU + overhead``, at most ``MAX_MTU``
    (at most the emulated underlay's 1500 on emulated hosts: ``scenario.check_capacity``)."""
    return Field(EMULATED_UNDERLAY_MTU, ge=MIN_MTU + overhead, le=MAX_MTU)


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
    """The node's own namespace; for a TAP node, the emulated host's (where the TAP is)."""
    ip: str
    ifname: str
    tap: str | None = None
    """The TAP device a virtual machine's NIC uses (``None``: a namespace node)."""
    guest_lines: tuple[str, ...] = ()
    """``ip`` lines configuring the node's own side, run inside a guest (TAP nodes)."""


NodeKind = Literal["netns", "tap", "machine"]
"""What a node or an emulated host is: a namespace of this kernel, a virtual machine on a TAP,
or (hosts only) a real machine reached over SSH, whose own namespace is the host's."""


@dataclass(frozen=True)
class PlanContext:
    """What a plan may depend on besides the topology: tools, kernel facts and what nodes
    are (namespaces, or virtual machines on TAP devices)."""

    run_dir: Path
    tools: dict[str, str] = field(default_factory=dict)
    features: dict[str, bool] = field(default_factory=dict)
    node_kind: NodeKind = "netns"
    host_kind: NodeKind = "netns"
    """What an emulated host is: a namespace, or a virtual machine on a TAP (its lines run
    inside the guest)."""

    def tool(self, name: str) -> str:
        return self.tools.get(name, name)

    def with_kinds(self, node_kind: NodeKind, host_kind: NodeKind) -> PlanContext:
        return replace(self, node_kind=node_kind, host_kind=host_kind)


class ServiceMap:
    """How a client reaches a server's service: at the server's own address and port."""

    def endpoint(self, server: Node, port: int, proto: str = "tcp") -> tuple[str, int]:
        return server.ip, port


OptionsT = TypeVar("OptionsT", bound=LayerOptions)


class Layer(Generic[OptionsT]):
    """Base class of network layers (subclasses set the class variables and ``plan``),
    typed by the options model its ``plan`` takes (``Layer[BridgedOptions]``): a layer never
    narrows its options itself. ``AnyLayer`` is any layer."""

    name: ClassVar[str]
    summary: ClassVar[str]
    options: ClassVar[type[LayerOptions]] = LayerOptions
    requires: ClassVar[tuple[str, ...]] = ()
    """Kernel features (keys of ``vnetbench.host.features``) without which the layer cannot work."""
    programs: ClassVar[tuple[Program, ...]] = ()
    """Programs the layer runs (``layers.programs``: found by the lab before planning, their
    versions recorded, doctor's and the machines' checks derived from them)."""
    fallback_programs: ClassVar[tuple[Program, ...]] = ()
    """Programs the layer runs only where the kernel lacks something (wireguard-go without
    the WireGuard module): its ``resolve_tools`` says when."""
    publishes_ports: ClassVar[bool] = False
    """Services are reached at the host's address through a published port (NAT)."""
    shares_host_netns: ClassVar[bool] = False
    backend: ClassVar[str] = "netns"
    """How nodes are realised: the name of a backend in ``vnetbench.backends.registry``
    (``netns``: namespaces the lab makes; ``docker``: containers; ``vm``: QEMU guests)."""
    twin: ClassVar[str | None] = None
    """The namespace layer this one is measured beside (Docker's modes, VM layers)."""
    host_reaches_own_nodes: ClassVar[bool] = True
    """The emulated host's own stack can talk to the nodes it holds (not so for macvlan and
    ipvlan children and their parent, as on real hosts)."""
    supports_vm_nodes: ClassVar[bool] = False
    """Nodes attach through ``node_link``, so they may be virtual machines on TAPs."""
    between_hosts: ClassVar[str] = ""
    """What of the layer's path only traffic between two emulated hosts crosses (a tunnel,
    an overlay's encapsulation), in words: nodes on one host reach each other without it,
    so a measurement there never crosses it (the report says so). Empty when two nodes on
    one host take the layer's whole path."""

    def plan(
        self, topo: Topology, opts: OptionsT, b: PlanBuilder, ctx: PlanContext
    ) -> list[NodePlacement]:
        raise NotImplementedError

    def check_supported(self) -> None:
        """UnsupportedError naming the missing kernel feature, before anything is built
        (layers needing a tool that cannot be found raise MissingToolError)."""
        features = kernel_features()
        for feature in self.requires:
            if not features.get(feature, False):
                raise UnsupportedError(
                    f"layer {self.name!r} needs the kernel feature {feature!r}, which this "
                    f"host lacks ({FEATURE_ADVICE.get(feature, 'see vnetbench doctor')}); "
                    "remove it from the scenario's layers or run on a kernel that has it"
                )

    def resolve_tools(self, topo: Topology) -> dict[str, str]:
        """Paths of the programs the plan runs (``programs``, and the link emulator when the
        topology shapes links); MissingToolError for one that is not installed."""
        wanted = list(self.programs)
        if topo.link.needs_emulator:
            wanted.append(LINKEM)
        return {program.name: program.find() for program in wanted}

    def resolve_machine_tools(self, topo: Topology) -> dict[str, str]:
        """The programs the plan runs when the hosts are real machines (by name where the
        machines' own are used; the lab checks each machine has them)."""
        return self.resolve_tools(topo)

    def service_map(self, topo: Topology, opts: OptionsT,
                    services: tuple[int, ...]) -> ServiceMap:
        """How clients reach services in a built lab of this layer."""
        return ServiceMap()


AnyLayer: TypeAlias = Layer[Any]
"""Any layer, whatever its options."""


def plan_underlay(topo: Topology, b: PlanBuilder, *, forwarding: bool,
                  ctx: PlanContext | None = None) -> None:
    """Switch namespace + bridge, one wire per host, host addresses, base sysctls.

    A host's wire is a veth into its namespace, or (``ctx.host_kind == "tap"``) a TAP in the
    switch namespace for the NIC of a virtual machine that is the host: the host's lines
    then run in that guest, whose NIC takes the underlay interface's name."""
    if ctx is not None and ctx.host_kind == "machine":
        plan_machine_underlay(topo, b, forwarding=forwarding)
        return
    tap_hosts = ctx is not None and ctx.host_kind == "tap"
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
        wire = (f"tuntap add dev {n.switch_port(i)} mode tap" if tap_hosts else
                f"link add {n.switch_port(i)} type veth peer name {n.underlay(i)} netns {host}")
        b.switch_lines[sw] += [
            wire,
            f"link set {n.switch_port(i)} master {n.switch_bridge}",
            f"link set {n.switch_port(i)} up",
        ]
        b.host_lines[host] += [
            "link set lo up",
            f"link set {n.underlay(i)} up",
            f"addr add {a.host_underlay(i)}/{a.underlay_prefix} dev {n.underlay(i)}",
        ]
        base_sysctls(b, host, forwarding=forwarding, bridge_nf=False)


def plan_machine_underlay(topo: Topology, b: PlanBuilder, *, forwarding: bool) -> None:
    """Real machines (a lab over SSH) stand on their own network: the underlay interface,
    its address and the machine's namespace exist and are left as they are. Only what the
    layer needs is set: forwarding on, when the layer routes (never turned off: a machine
    may be a router), recorded and restored at teardown (``remote.scripts``)."""
    if forwarding:
        for i in range(topo.hosts):
            b.sysctl(topo.names.host_ns(i), "net.ipv4.ip_forward", 1)


def base_sysctls(b: PlanBuilder, netns: str, *, forwarding: bool,
                 bridge_nf: bool | None) -> None:
    """The sysctls every lab namespace gets, set explicitly rather than inherited
    (``bridge_nf`` None: a namespace that holds no bridge, where bridge-nf-call-* act on
    nothing, so they are left alone: each subtree of /proc/sys/net a namespace touches costs
    a lookup that grows with the number of namespaces on the host)."""
    b.sysctl(netns, "net.ipv6.conf.all.disable_ipv6", 1)
    b.sysctl(netns, "net.ipv6.conf.default.disable_ipv6", 1)
    b.sysctl(netns, "net.ipv4.ip_forward", 1 if forwarding else 0)
    b.sysctl(netns, "net.ipv4.conf.all.rp_filter", 0)
    b.sysctl(netns, "net.ipv4.conf.default.rp_filter", 0)
    if bridge_nf is not None:
        set_bridge_nf(b, netns, bridge_nf)


def set_bridge_nf(b: PlanBuilder, netns: str, enabled: bool) -> None:
    """bridge-nf-call-*: whether bridged frames traverse iptables in this namespace."""
    b.sysctl(netns, "net.bridge.bridge-nf-call-iptables", 1 if enabled else 0)
    b.sysctl(netns, "net.bridge.bridge-nf-call-ip6tables", 0)
    b.sysctl(netns, "net.bridge.bridge-nf-call-arptables", 0)


def plan_node_namespaces(topo: Topology, b: PlanBuilder, ctx: PlanContext | None = None) -> None:
    """One namespace per node, loopback up, base sysctls (none for TAP nodes: their network
    stack is the guest's)."""
    if ctx is not None and ctx.node_kind == "tap":
        return
    for j in range(topo.nodes):
        ns = topo.names.node_ns(j)
        b.add_namespace(ns)
        b.node_lines[ns].append("link set lo up")
        base_sysctls(b, ns, forwarding=False, bridge_nf=None)


def node_link(topo: Topology, b: PlanBuilder, ctx: PlanContext, j: int, *, ip: str,
              host_lines: list[str], node_lines: list[str],
              mtu: int | None = None) -> NodePlacement:
    """Wire node ``j`` to its emulated host: a veth pair whose host end is
    ``names.veth_host(j)`` (namespace nodes) or a TAP of that name for a virtual machine's NIC
    (TAP nodes). ``host_lines`` then run on the host end (attach, routes), ``node_lines`` on the
    node's interface ``names.node_if(j)`` (addresses, routes): in the node's namespace, or
    inside the guest."""
    n = topo.names
    i = topo.host_of(j)
    host, dev, node_if = n.host_ns(i), n.veth_host(j), n.node_if(j)
    mtu_arg = f" mtu {mtu}" if mtu is not None else ""
    if ctx.node_kind == "tap":
        b.host_lines[host] += [f"tuntap add dev {dev} mode tap"]
        if mtu is not None:
            b.host_lines[host].append(f"link set {dev} mtu {mtu}")
        b.host_lines[host] += host_lines
        guest = ([f"link set {node_if} mtu {mtu}"] if mtu is not None else []) + node_lines
        return NodePlacement(j, i, host, ip, node_if, tap=dev, guest_lines=tuple(guest))
    node_ns = n.node_ns(j)
    b.host_lines[host] += [f"link add {dev}{mtu_arg} type veth peer name {node_if}{mtu_arg} "
                           f"netns {node_ns}", *host_lines]
    b.node_lines[node_ns] += node_lines
    return NodePlacement(j, i, node_ns, ip, node_if)


def plan_bridged_nodes(
    topo: Topology,
    b: PlanBuilder,
    *,
    bridge_nf: bool,
    mtu: int = 1500,
    overlay: bool = False,
    bridge_ip: bool = True,
    other_ports: int = 0,
    ctx: PlanContext,
) -> list[NodePlacement]:
    """Per-host bridge with one veth (or TAP) per node, docker0 style; the placements.

    ``overlay`` puts all nodes in the flat overlay subnet (VXLAN) instead of per-host subnets.
    ``other_ports``: bridge ports the layer adds (its VXLAN device). UnsupportedError when a
    host's nodes need more ports than a Linux bridge has (``BRIDGE_MAX_PORTS``).
    """
    n, a = topo.names, topo.addresses
    most = BRIDGE_MAX_PORTS - other_ports
    if topo.nodes_on_host(0) > most:
        raise UnsupportedError(
            f"{topo.nodes_on_host(0)} nodes on one host: a Linux bridge takes at most "
            f"{BRIDGE_MAX_PORTS} ports, so a host holds {most} nodes on this layer; add hosts "
            "(or use routed or macvlan, which need no bridge)")
    plan_node_namespaces(topo, b, ctx)
    placements = []
    for i in range(topo.hosts):
        host, br = n.host_ns(i), n.host_bridge(i)
        b.host_lines[host] += [f"link add {br} mtu {mtu} type bridge stp_state 0", f"link set {br} up"]
        if bridge_ip:
            b.host_lines[host].append(f"addr add {a.host_gateway(i)}/{a.host_prefix} dev {br}")
        set_bridge_nf(b, host, bridge_nf)
        for j in topo.node_ids_on(i):
            slot = topo.slot_of(j)
            ip, plen = ((a.overlay_node(j), 17) if overlay else
                        (a.subnet_node(i, slot), a.host_prefix))
            node_lines = [f"addr add {ip}/{plen} dev {n.node_if(j)}", f"link set {n.node_if(j)} up"]
            if bridge_ip and not overlay:
                node_lines.append(f"route add default via {a.host_gateway(i)}")
            placements.append(node_link(
                topo, b, ctx, j, ip=ip, mtu=mtu, node_lines=node_lines,
                host_lines=[f"link set {n.veth_host(j)} master {br}",
                            f"link set {n.veth_host(j)} up"]))
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
