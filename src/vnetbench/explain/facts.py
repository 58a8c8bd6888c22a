"""The path a layer's packets take, as the run recorded it (``run.json``'s lab facts).

Per layer: every device of the lab by its role (``h0/b0``: host 0's bridge), its kind
(veth, bridge, vxlan, tun, ...) and MTU; the nodes' offloads; the TCP MSS those MTUs allow
(MTU - 40 bytes of IPv4 and TCP headers, - 12 more with TCP timestamps, which Linux uses by
default); and the TCP congestion control (the machine's, which every network namespace
inherits when it is made). Nothing is measured here: it reads what the run recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from vnetbench.results.recorded import Legend

IP_TCP_HEADERS = 40
TIMESTAMPS = 12


@dataclass(frozen=True)
class Device:
    netns: str
    device: str
    kind: str
    mtu: int | None

    @property
    def role(self) -> str:
        return f"{self.netns}/{self.device}"


@dataclass(frozen=True)
class PathFacts:
    layer: str
    devices: dict[str, Device] = field(default_factory=dict)
    """By role (``h0/b0``)."""
    offloads: dict[str, dict[str, bool]] = field(default_factory=dict)
    """Per node: offload -> on."""
    congestion: str = ""

    def mss(self, node: str = "n0") -> int | None:
        """The MSS a node's own device allows with TCP timestamps (None when its MTU was not
        recorded)."""
        mtus = [d.mtu for d in self.devices.values() if d.netns == node and d.mtu]
        if not mtus:  # nodes on their host's own stack (the baseline): the host's devices
            host = f"h{node[1:]}" if node.startswith("n") else node
            mtus = [d.mtu for d in self.devices.values() if d.netns == host and d.mtu]
        return min(mtus) - IP_TCP_HEADERS - TIMESTAMPS if mtus else None

    def kind(self, netns: str, device: str) -> str:
        """The device's kind as recorded, else as its lab name says (``role_kind``)."""
        found = self.devices.get(f"{netns}/{device}")
        return found.kind if found is not None and found.kind else role_kind(device)

    def summary(self) -> str:
        """``MTU 1450 (MSS 1398), GSO/TSO on, GRO off, congestion control bbr``."""
        parts = []
        mss = self.mss("n0") or self.mss("n1")
        mtus = sorted({d.mtu for d in self.devices.values() if d.netns.startswith("n") and d.mtu}
                      or {d.mtu for d in self.devices.values()
                          if d.netns.startswith("h") and d.mtu})
        if mtus:
            parts.append(f"MTU {'/'.join(str(m) for m in mtus)}"
                         + (f" (MSS {mss})" if mss else ""))
        node = self.offloads.get("n0") or self.offloads.get("n1") or {}
        on = [short for name, short in OFFLOADS if node.get(name) is True]
        off = [short for name, short in OFFLOADS if node.get(name) is False]
        if on:
            parts.append(f"{'/'.join(on)} on")
        if off:
            parts.append(f"{'/'.join(off)} off")
        if self.congestion:
            parts.append(f"congestion control {self.congestion}")
        return ", ".join(parts)


ROLE_KINDS = {"sw": "bridge", "b": "bridge", "s": "veth", "u": "veth", "v": "veth",
              "e": "veth", "x": "vxlan", "w": "wireguard", "t": "tun"}
"""What the lab's names say a device is (``topology.Names``: ``<prefix>sw`` the switch,
``b<i>`` a host's bridge, ``s<i>``/``u<i>`` the underlay wire, ``v<j>``/``e<j>`` a node's
veth pair, ``x``/``w``/``t`` the tunnels), for runs that did not record kinds."""


def role_kind(device: str) -> str:
    """``bridge`` for ``b0``, ``veth`` for ``e1``... (empty for a name the lab did not
    give: Docker's devices, a machine's NIC)."""
    if device == "sw":
        return ROLE_KINDS["sw"]
    head, rest = device[:1], device[1:]
    return ROLE_KINDS.get(head, "") if rest.isdigit() else ""


OFFLOADS = (("tcp-segmentation-offload", "TSO"), ("generic-segmentation-offload", "GSO"),
            ("generic-receive-offload", "GRO"), ("tx-checksumming", "tx-csum"))


def _role(name: str) -> tuple[str, str]:
    """``vnb77b3-h0/vnb77b3b0`` -> (``h0``, ``b0``)."""
    netns, _, device = name.partition("/")
    prefix, dash, role = netns.partition("-")
    if not dash:
        return netns, device
    return role, device[len(prefix):] if device.startswith(prefix) else device


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def path_facts(environment: Mapping[str, object], layer: str) -> PathFacts:
    """What the run recorded of ``layer``'s path (empty facts when it recorded nothing)."""
    layers = environment.get("layers")
    facts = layers.get(layer) if isinstance(layers, Mapping) else None
    sysctls = environment.get("root_sysctls")
    congestion = str(sysctls.get("net.ipv4.tcp_congestion_control", "")) if isinstance(
        sysctls, Mapping) else ""
    if not isinstance(facts, Mapping):
        return PathFacts(layer, congestion=congestion)
    interfaces = facts.get("interfaces")
    interfaces = interfaces if isinstance(interfaces, Mapping) else {}
    mtu = _mapping(interfaces.get("mtu"))
    kind = _mapping(interfaces.get("kind"))
    devices: dict[str, Device] = {}
    for name in sorted(set(mtu) | set(kind)):
        netns, device = _role(str(name))
        value = mtu.get(name)
        devices[f"{netns}/{device}"] = Device(netns, device, str(kind.get(name, "")),
                                              int(value) if isinstance(value, int) else None)
    offloads: dict[str, dict[str, bool]] = {}
    raw = interfaces.get("offloads")
    if isinstance(raw, Mapping):
        for node, values in raw.items():
            if isinstance(values, Mapping):
                offloads[str(node)] = {str(k): bool(v) for k, v in values.items()
                                       if isinstance(v, bool)}
    return PathFacts(layer, devices, offloads, congestion)


def crossing_parts(environment: Mapping[str, object]) -> Mapping[str, str]:
    """Layer -> the part of its path that joins emulated hosts (``the WireGuard tunnel``), as
    the run's legend recorded it (``results.recorded.Legend``); for a run recorded before its
    legend, today's layers of those names."""
    legend = Legend.from_environment(environment)
    if legend.recorded:
        return legend.between_hosts
    from vnetbench.backends.catalog import LAYERS

    return {name: cls.between_hosts for name, cls in LAYERS.items() if cls.between_hosts}
