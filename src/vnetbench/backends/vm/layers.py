"""The ``vm-<layer>`` and ``vmhost-<layer>`` layers: namespace layers realised by QEMU guests.

Every namespace layer that wires its nodes through ``layers.base.node_link`` (bridge, nat,
routed, vxlan, wireguard, userspace) applies to virtual machines unchanged: planned with
``node_kind = "tap"``, the host end of each node's link is a TAP device instead of a veth,
and the guest's virtio-net NIC, renamed to the node's interface name, gets the lines the
node's namespace would have run (address, routes). ``vm-bridge`` is measured beside its twin
``bridge`` and beside ``host``, which stays the native baseline. ``vmhost-<layer>`` runs the
whole host part of a namespace layer inside a guest that is the emulated host.

Each is a class written here: a backend mixin (``OnVmNodes``, ``InVmHosts``) before the
namespace layer it realises; the mixin derives the name, the twin and the summary from it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from vnetbench.layers.base import AnyLayer
from vnetbench.layers.bridge import BridgeLayer
from vnetbench.layers.host import HostLayer
from vnetbench.layers.nat import NatLayer
from vnetbench.layers.registry import NAMESPACE_LAYERS
from vnetbench.layers.routed import RoutedLayer
from vnetbench.layers.userspace import UserspaceLayer
from vnetbench.layers.vxlan import VxlanLayer
from vnetbench.layers.wireguard import WireguardLayer

_NAMESPACE_CLASSES: dict[type, type[AnyLayer]] = {c: c for c in NAMESPACE_LAYERS.values()}
"""The namespace layers' classes, to find the one a guest layer realises in its MRO."""


class _RealisedByGuests:
    """A namespace layer (the next namespace class in the MRO) realised by ``backend``:
    named ``<backend>-<its name>``, measured beside it as its twin."""

    backend: ClassVar[str]
    realised_as: ClassVar[str]
    """What changes, put before the namespace layer's own summary."""
    name: ClassVar[str]
    summary: ClassVar[str]
    twin: ClassVar[str | None]
    supports_vm_nodes: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        base = next((_NAMESPACE_CLASSES[c] for c in cls.__mro__ if c in _NAMESPACE_CLASSES),
                    None)
        if base is None:
            return  # an intermediate mixin
        cls.name = f"{cls.backend}-{base.name}"
        cls.summary = f"{cls.realised_as}: {base.summary}"
        cls.twin = base.name


class OnVmNodes(_RealisedByGuests):
    """Nodes are QEMU guests, their NICs on TAPs."""

    backend = "vm"
    realised_as = "QEMU guests as nodes, on TAPs"


class InVmHosts(_RealisedByGuests):
    """Each emulated host is a QEMU guest; the nodes are namespaces inside it."""

    backend = "vmhost"
    realised_as = "each host a QEMU guest, nodes namespaces inside"


class VmBridgeLayer(OnVmNodes, BridgeLayer):
    """``bridge`` with QEMU guests as nodes (their NICs on TAPs)."""


class VmNatLayer(OnVmNodes, NatLayer):
    """``nat`` with QEMU guests as nodes (their NICs on TAPs)."""


class VmRoutedLayer(OnVmNodes, RoutedLayer):
    """``routed`` with QEMU guests as nodes (their NICs on TAPs)."""


class VmVxlanLayer(OnVmNodes, VxlanLayer):
    """``vxlan`` with QEMU guests as nodes (their NICs on TAPs)."""


class VmWireguardLayer(OnVmNodes, WireguardLayer):
    """``wireguard`` with QEMU guests as nodes (their NICs on TAPs)."""


class VmUserspaceLayer(OnVmNodes, UserspaceLayer):
    """``userspace`` with QEMU guests as nodes (their NICs on TAPs)."""


class VmhostHostLayer(InVmHosts, HostLayer):
    """``host`` inside QEMU guests that are the emulated hosts."""


class VmhostBridgeLayer(InVmHosts, BridgeLayer):
    """``bridge`` inside QEMU guests that are the emulated hosts."""


class VmhostRoutedLayer(InVmHosts, RoutedLayer):
    """``routed`` inside QEMU guests that are the emulated hosts."""


class VmhostVxlanLayer(InVmHosts, VxlanLayer):
    """``vxlan`` inside QEMU guests that are the emulated hosts."""


VM_LAYERS: tuple[type[AnyLayer], ...] = (
    VmBridgeLayer, VmNatLayer, VmRoutedLayer, VmVxlanLayer, VmWireguardLayer, VmUserspaceLayer)
"""Every namespace layer with ``supports_vm_nodes``, on guests (a test keeps them in step)."""

VMHOST_LAYERS: tuple[type[AnyLayer], ...] = (
    VmhostHostLayer, VmhostBridgeLayer, VmhostRoutedLayer, VmhostVxlanLayer)
"""Namespace layers whose host part is only links, routes and sysctls (runs in a guest)."""

VMHOST_BASES: tuple[str, ...] = tuple(str(cls.twin) for cls in VMHOST_LAYERS)
