"""One lab, whole, as a value: ``LabSpec`` (and ``MachineSpec``, one real machine a lab may
run on).

A spec is made once (from a scenario point by ``scenario.specs.lab_spec``, by ``vnetbench
up`` from its options, or by hand in a test) and taken whole by everything that builds or
describes a lab: ``open_lab`` builds it, ``plan_of`` plans it without the kernel, ``up``
keeps it. Nothing here touches the kernel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vnetbench.lab.placement import PlacementMode
from vnetbench.lab.topology import LinkShape, Resources


@dataclass(frozen=True)
class MachineSpec:
    """One real machine as a scenario names it."""

    ssh: str
    """OpenSSH destination as the user writes it: ``root@192.0.2.10``, ``lab1`` (a Host of
    their ssh config), ``root@host``."""
    underlay: str
    """The interface on that machine that carries lab traffic, e.g. ``eth1``."""
    identity: str | None = None
    """A private key file (``~`` expanded)."""
    port: int | None = None
    docker: str = "private"
    """``private`` or ``existing``: which Docker engine the docker layers use there."""


@dataclass(frozen=True)
class LabSpec:
    """Everything that decides what a lab is: its layer (a name of ``backends.catalog``),
    hosts and nodes, the links between hosts, the nodes' resources, the layer's options, the
    seed of its random choices (link emulation), the service ports workloads will use
    (published where a layer publishes ports), the CPU placement of its processes and the
    CPUs it may use (``None``: all this process may use), and the real machines its hosts
    are (none: emulated hosts on this kernel)."""

    layer: str = "bridge"
    hosts: int = 1
    nodes: int = 2
    link: LinkShape = field(default_factory=LinkShape)
    resources: Resources = field(default_factory=Resources)
    layer_options: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    services: tuple[int, ...] = ()
    placement: PlacementMode = "off"
    cpus: tuple[int, ...] | None = None
    machines: tuple[MachineSpec, ...] = ()
    launches: bool = False
    """A workload starts programs in other nodes from inside one (MPI's launcher)."""
    backend: str = ""
    """The backend that realises the lab (a name of ``backends.registry``: ``netns``,
    ``docker``, ``vm``, ``vmhost``, ``machines``, ``kubernetes``), decided once where the
    scenario becomes a spec (``scenario.specs.lab_spec``: ``machines`` where the scenario's
    hosts are real machines, else the layer's own); empty in a spec written by hand, which
    then takes the same rule."""

    @property
    def reached(self) -> tuple[str, ...]:
        """What the lab's hosts are reached through beyond this kernel: the real machines'
        SSH targets (empty: emulated hosts here)."""
        return tuple(m.ssh for m in self.machines)
