"""Pure data describing a virtual cluster: hosts, nodes, their placement, shaping, resources.

Naming scheme (every kernel object starts with ``vnb`` + the run's 4-hex short id, so two runs
never collide and ``vnetbench clean`` can find leftovers; interface names stay within 15 chars):

    namespaces   vnb<id>-sw            the underlay switch (a bridge joining the hosts)
                 vnb<id>-h<i>          emulated physical host i
                 vnb<id>-n<j>          node j (absent for the ``host`` layer: nodes share the host)
    interfaces   vnb<id>s<i>           switch port towards host i     (in vnb<id>-sw)
                 vnb<id>sw             the switch bridge               (in vnb<id>-sw)
                 vnb<id>u<i>           host i's underlay interface     (in vnb<id>-h<i>)
                 vnb<id>b<i>           host i's node bridge            (bridge, nat, vxlan, ...)
                 vnb<id>v<j>           node j's veth, host side        (in vnb<id>-h<i>)
                 vnb<id>e<j>           node j's interface, node side   (in vnb<id>-n<j>)
                 vnb<id>x<i>           host i's VXLAN device
                 vnb<id>w<i>           host i's WireGuard device
                 vnb<id>t<i>           host i's tun device (userspace encapsulation)

Address plan, inside one free /16 ``<X.Y>.0.0/16`` (``10.213.0.0/16``, say) chosen per run (see
``addressing``). Each host owns ``span`` /24 blocks of its ranges: 1 while it holds at most 250
nodes (the layout every lab of up to 250 nodes per host has always had), else the smallest
power of two that fits (4 blocks, a /22, for 1000 nodes); a slot s lives in block s // 250 at
.(s % 250 + 2):

    X.Y.0.0/18        underlay L2 segment: host i = X.Y.0.(i+1); macvlan/ipvlan node in slot s
                       of host i = X.Y.((i+1)·span + s//250).(s%250 + 2)
    X.Y.(64+i·span).0 host i's node subnet, a /(24 - log2 span) (bridge, nat, routed,
                       wireguard, userspace); the bridge gateway is .1 of its first block
    X.Y.128.0/17      flat overlay subnet (vxlan): node j = X.Y.(128 + j//250).(j%250 + 2)

So (hosts + 1) · span <= 64: 60 hosts of 250 nodes, 8 hosts of 1000, one host of 8000.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

MAX_HOSTS = 60
SLOTS_PER_BLOCK = 250
"""Nodes per /24 block of a host's ranges (.2 to .251)."""
BLOCKS = 64
"""/24 blocks in each of the underlay's and the host subnets' /18: (hosts + 1) * span <= 64."""
MAX_NODES_PER_HOST = SLOTS_PER_BLOCK * BLOCKS // 2
"""Most nodes one host holds (a lab of one host: 32 blocks)."""
MAX_NODES = SLOTS_PER_BLOCK * BLOCKS
"""A bound no lab reaches (``capacity_problem`` says what fits: 60 hosts of 250, ...)."""


def host_of_node(j: int, hosts: int) -> int:
    """The host of node ``j``: nodes are placed round-robin over the hosts."""
    return j % hosts


def blocks_per_host(nodes_per_host: int) -> int:
    """The /24 blocks a host with this many nodes needs (a power of two)."""
    span = 1
    while span * SLOTS_PER_BLOCK < nodes_per_host:
        span *= 2
    return span


def capacity_problem(hosts: int, nodes: int) -> str | None:
    """Why ``nodes`` nodes round-robin on ``hosts`` hosts do not fit the address plan (None:
    they do)."""
    per_host = -(-nodes // hosts)
    if (hosts + 1) * blocks_per_host(per_host) <= BLOCKS:
        return None
    room = 1
    while (hosts + 1) * room * 2 <= BLOCKS:
        room *= 2
    return (f"{nodes} nodes on {hosts} host(s) is {per_host} per host; the address plan holds "
            f"{room * SLOTS_PER_BLOCK} per host with {hosts} host(s) (at most "
            f"{MAX_NODES_PER_HOST} on one host): lower nodes or hosts")


@dataclass(frozen=True)
class LinkShape:
    """How the underlay "wire" between hosts is shaped (each direction, one way)."""

    delay: float = 0.0  # seconds, one way
    jitter: float = 0.0  # seconds, standard deviation
    loss: float = 0.0  # fraction 0..1
    rate: float = 0.0  # bits per second; 0 = unlimited
    pair_delays: tuple[tuple[int, int, float], ...] = ()
    """One-way delay between two hosts (each direction), where it differs from ``delay``."""

    @property
    def needs_emulator(self) -> bool:
        return (self.delay > 0 or self.jitter > 0 or self.loss > 0
                or any(d > 0 for _, _, d in self.pair_delays))

    def delay_between(self, i: int, k: int) -> float:
        """The one-way delay from host ``i`` to host ``k``."""
        for a, b, d in self.pair_delays:
            if {a, b} == {i, k}:
                return d
        return self.delay

    @property
    def is_shaped(self) -> bool:
        return self.needs_emulator or self.rate > 0


@dataclass(frozen=True)
class Resources:
    """Per-node limits, realised as cgroups."""

    cpus: float | None = None  # CPU quota in cores (0.5 = half a core)
    memory: int | None = None  # bytes
    cpuset: str | None = None  # e.g. "0" or "0-1"
    disk: int | None = None
    """Bytes of a VM guest's own disk (``vm`` backends; nodes on this host use its disk)."""

    @property
    def any(self) -> bool:
        return self.cpus is not None or self.memory is not None or self.cpuset is not None


@dataclass(frozen=True)
class Names:
    """Kernel object names of one run (see the module docstring)."""

    short_id: str
    machine_underlays: tuple[str, ...] = ()
    """The underlay interface of each real machine (a lab on machines over SSH): host i's
    underlay is that interface instead of ``vnb<id>u<i>``."""

    @property
    def prefix(self) -> str:
        return f"vnb{self.short_id}"

    @property
    def switch_ns(self) -> str:
        return f"{self.prefix}-sw"

    def host_ns(self, i: int) -> str:
        return f"{self.prefix}-h{i}"

    def node_ns(self, j: int) -> str:
        return f"{self.prefix}-n{j}"

    @property
    def switch_bridge(self) -> str:
        return f"{self.prefix}sw"

    def switch_port(self, i: int) -> str:
        return f"{self.prefix}s{i}"

    def underlay(self, i: int) -> str:
        if self.machine_underlays:
            return self.machine_underlays[i]
        return f"{self.prefix}u{i}"

    def host_bridge(self, i: int) -> str:
        return f"{self.prefix}b{i}"

    def veth_host(self, j: int) -> str:
        return f"{self.prefix}v{j}"

    def node_if(self, j: int) -> str:
        return f"{self.prefix}e{j}"

    def vxlan(self, i: int) -> str:
        return f"{self.prefix}x{i}"

    def wireguard(self, i: int) -> str:
        return f"{self.prefix}w{i}"

    def tun(self, i: int) -> str:
        return f"{self.prefix}t{i}"


@dataclass(frozen=True)
class Addresses:
    """The address plan of one run inside <net>.0.0/16."""

    net: str
    """The first two octets of the run's /16, e.g. ``10.213``."""
    span: int = 1
    """/24 blocks per host (a power of two; ``Topology`` sets it from its nodes per host)."""
    machine_addresses: tuple[str, ...] = ()
    """The underlay address of each real machine (a lab on machines over SSH)."""

    @property
    def base(self) -> str:
        return f"{self.net}.0.0/16"

    @property
    def underlay_prefix(self) -> int:
        return 18

    @property
    def host_prefix(self) -> int:
        """Prefix length of a host's node subnet (24 for one block)."""
        return 24 - (self.span.bit_length() - 1)

    def host_underlay(self, i: int) -> str:
        if self.machine_addresses:
            return self.machine_addresses[i]
        return f"{self.net}.0.{i + 1}"

    def _slot(self, first_block: int, slot: int) -> str:
        return (f"{self.net}.{first_block + slot // SLOTS_PER_BLOCK}."
                f"{slot % SLOTS_PER_BLOCK + 2}")

    def direct_node(self, host: int, slot: int) -> str:
        return self._slot((host + 1) * self.span, slot)

    def direct_range(self, host: int) -> str:
        """The underlay block host ``host``'s macvlan/ipvlan nodes take addresses from."""
        return f"{self.net}.{(host + 1) * self.span}.0/{self.host_prefix}"

    def host_subnet(self, i: int) -> str:
        return f"{self.net}.{64 + i * self.span}.0/{self.host_prefix}"

    def host_gateway(self, i: int) -> str:
        return f"{self.net}.{64 + i * self.span}.1"

    def subnet_node(self, host: int, slot: int) -> str:
        return self._slot(64 + host * self.span, slot)

    @property
    def overlay_subnet(self) -> str:
        return f"{self.net}.128.0/17"

    def overlay_node(self, j: int) -> str:
        return self._slot(128, j)


@dataclass(frozen=True)
class Topology:
    """Hosts and nodes of one lab; nodes are placed round-robin over hosts."""

    hosts: int
    nodes: int
    names: Names
    addresses: Addresses
    link: LinkShape = field(default_factory=LinkShape)
    resources: Resources = field(default_factory=Resources)

    def __post_init__(self) -> None:
        if not 1 <= self.hosts <= MAX_HOSTS:
            raise ValueError(f"hosts must be 1..{MAX_HOSTS}, got {self.hosts}")
        if self.nodes < 1:
            raise ValueError(f"nodes must be at least 1, got {self.nodes}")
        problem = capacity_problem(self.hosts, self.nodes)
        if problem:
            raise ValueError(problem)
        span = blocks_per_host(self.nodes_on_host(0))
        if self.addresses.span != span:  # the plan's blocks follow the nodes per host
            object.__setattr__(self, "addresses", replace(self.addresses, span=span))

    def host_of(self, j: int) -> int:
        return host_of_node(j, self.hosts)

    def slot_of(self, j: int) -> int:
        """Index of node j among the nodes of its host."""
        return j // self.hosts

    def nodes_on_host(self, i: int) -> int:
        return len(range(i, self.nodes, self.hosts))

    def node_ids_on(self, i: int) -> list[int]:
        return list(range(i, self.nodes, self.hosts))
