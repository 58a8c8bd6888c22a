"""The explicit registry of backends: name -> backend class (a duplicate is an error).

``backend_for(layer)`` makes the backend a layer's nodes need (``Layer.backend``), one
instance per lab. Unit tests add their fake backend with ``register``.
"""

from __future__ import annotations

from vnetbench.backends.base import Backend
from vnetbench.backends.docker.backend import DockerBackend
from vnetbench.backends.netns.backend import NetnsBackend
from vnetbench.backends.vm.backend import VmBackend
from vnetbench.backends.vm.hosts import VmHostBackend
from vnetbench.layers.base import Layer

BACKENDS: dict[str, type[Backend]] = {}


def register(cls: type[Backend]) -> type[Backend]:
    """Add a backend; ValueError if its name is taken by another class."""
    if BACKENDS.get(cls.name, cls) is not cls:
        raise ValueError(f"backend name {cls.name!r} registered twice")
    BACKENDS[cls.name] = cls
    return cls


for _cls in (NetnsBackend, DockerBackend, VmBackend, VmHostBackend):
    register(_cls)


def backend_class(layer: Layer) -> type[Backend]:
    try:
        return BACKENDS[layer.backend]
    except KeyError:
        raise KeyError(f"layer {layer.name!r} needs backend {layer.backend!r}, which is not "
                       f"registered; known: {', '.join(BACKENDS)}") from None


def check_layer(layer: Layer) -> None:
    """UnsupportedError / MissingToolError when this host cannot build ``layer``."""
    backend_class(layer).check(layer)


def needs_root(layer: Layer) -> bool:
    return backend_class(layer).needs_root


def backend_for(layer: Layer) -> Backend:
    """A fresh backend for a lab of ``layer``."""
    return backend_class(layer)()
