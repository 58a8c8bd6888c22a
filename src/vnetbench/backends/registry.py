"""The explicit registry of backends: name -> backend class (a duplicate is an error).

``backend_for(layer)`` makes the backend a layer's nodes need (``Layer.backend``), one
instance per lab. The built-in backends are imported when first asked for (a namespace lab
never loads Docker's or QEMU's code); the layers they contribute come from light modules
(``CONTRIBUTED_LAYERS``), so the catalogue of layer names needs no backend loaded. Unit
tests add their fake backend with ``register`` (or straight into ``BACKENDS``).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from vnetbench.backends.base import Backend
from vnetbench.lab.spec import LabSpec
from vnetbench.layers.base import AnyLayer

BACKENDS: dict[str, type[Backend]] = {}
"""The backends loaded so far, and any registered."""

BUILTIN: dict[str, str] = {
    "netns": "vnetbench.backends.netns.backend:NetnsBackend",
    "docker": "vnetbench.backends.docker.backend:DockerBackend",
    "vm": "vnetbench.backends.vm.backend:VmBackend",
    "vmhost": "vnetbench.backends.vm.hosts:VmHostBackend",
    "machines": "vnetbench.backends.machines.backend:MachinesBackend",
    "kubernetes": "vnetbench.backends.kubernetes.backend:KubernetesBackend",
}
CONTRIBUTED_LAYERS: tuple[str, ...] = (
    "vnetbench.backends.docker.modes:DOCKER_LAYERS",
    "vnetbench.backends.vm.layers:VM_LAYERS",
    "vnetbench.backends.vm.layers:VMHOST_LAYERS",
    "vnetbench.backends.kubernetes.layers:K8S_LAYERS",
)
"""Where the built-in backends' layers (each backend's ``layers``) are defined."""


def _load(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(import_module(module), attr)


def register(cls: type[Backend]) -> type[Backend]:
    """Add a backend; ValueError if its name is taken by another class."""
    if BACKENDS.get(cls.name, cls) is not cls:
        raise ValueError(f"backend name {cls.name!r} registered twice")
    BACKENDS[cls.name] = cls
    return cls


def all_backends() -> list[type[Backend]]:
    """Every backend, the built-in ones loaded (``vnetbench clean`` asks each)."""
    for name in BUILTIN:
        _builtin(name)
    return list(BACKENDS.values())


def contributed_layers() -> list[type[AnyLayer]]:
    """The layers backends contribute: the built-in ones' and those of registered backends."""
    out: list[type[AnyLayer]] = [cls for ref in CONTRIBUTED_LAYERS for cls in _load(ref)]
    out += [cls for backend in BACKENDS.values() for cls in backend.layers if cls not in out]
    return out


def _builtin(name: str) -> type[Backend] | None:
    if name not in BACKENDS and name in BUILTIN:
        cls = _load(BUILTIN[name])
        if cls.name != name:  # pragma: no cover - a typo in BUILTIN
            raise ValueError(f"BUILTIN names {BUILTIN[name]} {name!r}; it is {cls.name!r}")
        register(cls)
    return BACKENDS.get(name)


def backend_class(layer: AnyLayer) -> type[Backend]:
    cls = _builtin(layer.backend)
    if cls is None:
        raise KeyError(f"layer {layer.name!r} needs backend {layer.backend!r}, which is not "
                       f"registered; known: {', '.join({**BUILTIN, **BACKENDS})}")
    return cls


def check_layer(layer: AnyLayer) -> None:
    """UnsupportedError / MissingToolError when this host cannot build ``layer``."""
    backend_class(layer).check(layer)


def needs_root(layer: AnyLayer) -> bool:
    return backend_class(layer).needs_root


def backend_for(layer: AnyLayer) -> Backend:
    """A fresh backend for a lab of ``layer``."""
    return backend_class(layer)()


ON_MACHINES = "machines"
"""The backend that realises a lab whose hosts are real machines (a ``LabSpec`` with
``machines``), whatever the layer's own backend is; it refuses the layers it cannot run."""


def spec_backend_name(spec: LabSpec, layer: AnyLayer) -> str:
    """Which backend realises ``spec``'s lab of ``layer``: the one the spec names, else
    ``machines`` for real machines, else the layer's own (the rule ``lab_spec`` applies)."""
    return spec.backend or (ON_MACHINES if spec.machines else layer.backend)


def spec_backend_class(spec: LabSpec, layer: AnyLayer) -> type[Backend]:
    """The backend class that realises ``spec``'s lab of ``layer``."""
    name = spec_backend_name(spec, layer)
    cls = _builtin(name)
    if cls is None:
        raise KeyError(f"layer {layer.name!r} needs backend {name!r}, which is not "
                       f"registered; known: {', '.join({**BUILTIN, **BACKENDS})}")
    return cls
