"""Every layer vnetbench knows, by name: the namespace layers (``layers.registry``) and the
layers backends contribute (Docker's network modes, ``vm-<layer>``). A duplicate name is an
error. The CLI, scenarios, plans and reports look layers up here.
"""

from __future__ import annotations

from vnetbench.backends.registry import contributed_layers
from vnetbench.layers.base import AnyLayer
from vnetbench.layers.registry import NAMESPACE_LAYERS


def _catalogue() -> dict[str, type[AnyLayer]]:
    out = dict(NAMESPACE_LAYERS)
    for cls in contributed_layers():
        if cls.name in out:
            raise ValueError(f"layer name {cls.name!r} registered twice")
        out[cls.name] = cls
    return out


LAYERS: dict[str, type[AnyLayer]] = _catalogue()


def get_layer(name: str) -> AnyLayer:
    try:
        return LAYERS[name]()
    except KeyError:
        raise KeyError(f"unknown layer {name!r}; known: {', '.join(LAYERS)}") from None
