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

from vnetbench.layers.base import Layer
from vnetbench.layers.registry import NAMESPACE_LAYERS


def vm_layer(base: type[Layer]) -> type[Layer]:
    """The ``vm-<name>`` layer of namespace layer ``base``."""
    namespace = {
        "__doc__": f"``{base.name}`` with QEMU guests as nodes (their NICs on TAPs).",
        "__module__": __name__,
        "name": f"vm-{base.name}",
        "summary": f"QEMU guests as nodes, on TAPs: {base.summary}",
        "backend": "vm",
        "twin": base.name,
        "supports_vm_nodes": False,
    }
    return cast(type[Layer], type(f"Vm{base.__name__}", (base,), namespace))


VM_LAYERS: tuple[type[Layer], ...] = tuple(
    vm_layer(cls) for cls in NAMESPACE_LAYERS.values() if cls.supports_vm_nodes)
