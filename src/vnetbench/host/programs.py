"""A program whose output becomes a run's numbers, as a value: its name, how it is found
(the way the run finds it), how it tells its version, whether its binary's digest is worth
recording, and the Debian package that provides it. The workload registry declares each
workload's (``workloads.registry.programs``) without loading the workload; the layers' and
backends' daemons are listed by provenance.
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
    ``digest``: record its binary's SHA-256; ``package``: the Debian package with it)."""

    name: str
    find: Callable[[], str]
    version_args: tuple[str, ...] = ("--version",)
    digest: bool = False
    package: str | None = None


def on_path(name: str, package: str) -> Program:
    """A program found on ``PATH``, from Debian package ``package``."""
    def find() -> str:
        found = shutil.which(name)
        if found is None:
            raise MissingToolError(f"{name} not found (Debian package {package})")
        return found
    return Program(name, find, package=package)


def native(name: str, version_args: tuple[str, ...] = ("--version",)) -> Program:
    """One of vnetbench's own programs (``host.binaries``), its digest recorded."""
    def find() -> str:
        from vnetbench.host.binaries import find_binary

        return str(find_binary(name))
    return Program(name, find, version_args, digest=True)


def found_by(name: str, ref: str, version_args: tuple[str, ...] = ("--version",), *,
             digest: bool = False, package: str | None = None) -> Program:
    """A program found by the function ``ref`` names (``module:function``, returning its path),
    imported only when the program is looked for: declaring it loads nothing."""
    def find() -> str:
        module, _, attr = ref.partition(":")
        return str(getattr(import_module(module), attr)())
    return Program(name, find, version_args, digest, package)
