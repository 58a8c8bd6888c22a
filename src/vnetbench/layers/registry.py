"""The explicit registry of the namespace layers: name -> layer class (a duplicate is an
error), and every program they may run (``layer_programs``). Backends add layers of their
own; ``vnetbench.backends.catalog`` has them all."""

from __future__ import annotations

from vnetbench.host.programs import Program
from vnetbench.layers.base import AnyLayer
from vnetbench.layers.bridge import BridgeLayer
from vnetbench.layers.host import HostLayer
from vnetbench.layers.macvlan import IpvlanLayer, MacvlanLayer
from vnetbench.layers.nat import NatLayer
from vnetbench.layers.programs import LINKEM
from vnetbench.layers.routed import RoutedLayer
from vnetbench.layers.userspace import UserspaceLayer
from vnetbench.layers.vxlan import VxlanLayer
from vnetbench.layers.wireguard import WireguardLayer


def _register(*classes: type[AnyLayer]) -> dict[str, type[AnyLayer]]:
    registry: dict[str, type[AnyLayer]] = {}
    for cls in classes:
        if cls.name in registry:
            raise ValueError(f"layer name {cls.name!r} registered twice")
        registry[cls.name] = cls
    return registry


NAMESPACE_LAYERS: dict[str, type[AnyLayer]] = _register(
    HostLayer, BridgeLayer, NatLayer, MacvlanLayer, IpvlanLayer, RoutedLayer, VxlanLayer,
    WireguardLayer, UserspaceLayer,
)


def layer_programs() -> tuple[Program, ...]:
    """Every program a layer may run (``layers.programs``): the link emulator, then each
    namespace layer's own and fallback programs (the other backends' layers derive from
    these), once each."""
    out: dict[str, Program] = {LINKEM.name: LINKEM}
    for cls in NAMESPACE_LAYERS.values():
        for program in (*cls.programs, *cls.fallback_programs):
            out.setdefault(program.name, program)
    return tuple(out.values())
