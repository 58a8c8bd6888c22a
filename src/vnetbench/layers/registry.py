"""The explicit registry of network layers: name -> layer class (a duplicate is an error).

The namespace layers first, then Docker's network modes (``vnetbench.backends.docker``)."""

from __future__ import annotations

from vnetbench.backends.docker.modes import DOCKER_LAYERS
from vnetbench.layers.base import Layer
from vnetbench.layers.bridge import BridgeLayer
from vnetbench.layers.host import HostLayer
from vnetbench.layers.macvlan import IpvlanLayer, MacvlanLayer
from vnetbench.layers.nat import NatLayer
from vnetbench.layers.routed import RoutedLayer
from vnetbench.layers.userspace import UserspaceLayer
from vnetbench.layers.vxlan import VxlanLayer
from vnetbench.layers.wireguard import WireguardLayer


def _register(*classes: type[Layer]) -> dict[str, type[Layer]]:
    registry: dict[str, type[Layer]] = {}
    for cls in classes:
        if cls.name in registry:
            raise ValueError(f"layer name {cls.name!r} registered twice")
        registry[cls.name] = cls
    return registry


LAYERS: dict[str, type[Layer]] = _register(
    HostLayer, BridgeLayer, NatLayer, MacvlanLayer, IpvlanLayer, RoutedLayer, VxlanLayer,
    WireguardLayer, UserspaceLayer, *DOCKER_LAYERS,
)


def get_layer(name: str) -> Layer:
    try:
        return LAYERS[name]()
    except KeyError:
        raise KeyError(f"unknown layer {name!r}; known: {', '.join(LAYERS)}") from None
