"""A program whose output becomes a run's numbers, as a value: its name, how it is found
(the way the run finds it), how it tells its version, whether its binary's digest is worth
recording, the Debian package that provides it and what it is for (``vnetbench doctor``'s
line). The workload registry declares each workload's (``workloads.registry.programs``)
without loading the workload, each layer its own (``Layer.programs``, ``layers.programs``);
provenance, doctor and the machines' checks read those declarations.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module

from vnetbench.errors import MissingToolError


@dataclass(frozen=True)
class Program:
    """How to find one program and ask its version (``version_args`` empty: it has none;
    ``digest``: record its binary's SHA-256; ``package``: the Debian package with it;
    ``purpose``: what it is for, or what lacking it means)."""

    name: str
    find: Callable[[], str]
    version_args: tuple[str, ...] = ("--version",)
    digest: bool = False
    package: str | None = None
    purpose: str = ""


@dataclass(frozen=True)
class PodNeeds:
    """What a workload's programs need in vnetbench's pod image: ``programs`` found on this
    machine's PATH (at their paths here, with the libraries ``ldd`` names), ``data``
    directories (each the first match of its glob patterns) and ``located`` programs found
    otherwise (path in the image, ``module:function`` returning the file here)."""

    programs: tuple[str, ...]
    data: tuple[tuple[str, ...], ...] = ()
    located: tuple[tuple[str, str], ...] = ()


def on_path(name: str, package: str, *, purpose: str = "") -> Program:
    """A program found on ``PATH``, from Debian package ``package``."""
    def find() -> str:
        found = shutil.which(name)
        if found is None:
            raise MissingToolError(f"{name} not found (Debian package {package})")
        return found
    return Program(name, find, package=package, purpose=purpose)


def native(name: str, version_args: tuple[str, ...] = ("--version",), *,
           purpose: str = "") -> Program:
    """One of vnetbench's own programs (``host.binaries``), its digest recorded."""
    def find() -> str:
        from vnetbench.host.binaries import find_binary

        return str(find_binary(name))
    return Program(name, find, version_args, digest=True, purpose=purpose)


def found_by(name: str, ref: str, version_args: tuple[str, ...] = ("--version",), *,
             digest: bool = False, package: str | None = None, purpose: str = "") -> Program:
    """A program found by the function ``ref`` names (``module:function``, returning its path),
    imported only when the program is looked for: declaring it loads nothing."""
    def find() -> str:
        module, _, attr = ref.partition(":")
        return str(getattr(import_module(module), attr)())
    return Program(name, find, version_args, digest, package, purpose)
