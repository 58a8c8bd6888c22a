"""The ``vm-<layer>`` layers: a namespace layer whose nodes are QEMU guests.

Every namespace layer that wires its nodes through ``layers.base.node_link`` (bridge, nat,
routed, vxlan, wireguard, userspace) applies to virtual machines unchanged: planned with
``node_kind = "tap"``, the host end of each node's link is a TAP device instead of a veth,
and the guest's virtio-net NIC, renamed to the node's interface name, gets the lines the
node's namespace would have run (address, routes). ``vm-bridge`` is measured beside its twin
``bridge`` and beside ``host``, which stays the native baseline.
"""

from __future__ import annotations

from typing import cast

from vnetbench.layers.base import AnyLayer
from vnetbench.layers.registry import NAMESPACE_LAYERS


def derived_layer(base: type[AnyLayer], backend: str, doc: str, summary: str) -> type[AnyLayer]:
    """Namespace layer ``base`` realised by ``backend``: named ``<backend>-<name>``,
    measured beside its twin ``base``; ``doc`` and ``summary`` describe what changes."""
    namespace = {
        "__doc__": f"``{base.name}`` {doc}.",
        "__module__": __name__,
        "name": f"{backend}-{base.name}",
        "summary": f"{summary}: {base.summary}",
        "backend": backend,
        "twin": base.name,
        "supports_vm_nodes": False,
    }
    return cast(type[AnyLayer], type(f"{backend.title()}{base.__name__}", (base,), namespace))


VM_LAYERS: tuple[type[AnyLayer], ...] = tuple(
    derived_layer(cls, "vm", "with QEMU guests as nodes (their NICs on TAPs)",
                  "QEMU guests as nodes, on TAPs")
    for cls in NAMESPACE_LAYERS.values() if cls.supports_vm_nodes)


VMHOST_BASES = ("host", "bridge", "routed", "vxlan")
"""Namespace layers whose host part is only links, routes and sysctls (runs in a guest)."""

VMHOST_LAYERS: tuple[type[AnyLayer], ...] = tuple(
    derived_layer(NAMESPACE_LAYERS[b], "vmhost", "inside QEMU guests that are the emulated hosts",
                  "each host a QEMU guest, nodes namespaces inside")
    for b in VMHOST_BASES)
