"""The explicit registry of workloads: scenario key -> (options model, factory).

Probe modes (rr, crr, stream, gaps, barrier, media) come from ``vnetbench.workloads.probe``;
``oltp`` (MariaDB + sysbench), ``mpi`` (OpenMPI), ``hadoop``, ``iperf3``, ``sockperf``,
``command`` (the user's own server and client) and ``concurrent`` (workloads run at once)
from their modules. The
table below names each workload's module, so a scenario imports only the modules it uses
(start-up time matters: ``vnetbench run`` is timed as a whole). A duplicate name is an
error. An options model may declare ``extra_nodes`` (a ClassVar): the lab then has that
many nodes beyond the scenario's ``nodes`` (Hadoop's master).
"""

from __future__ import annotations

import importlib
from functools import cache

from pydantic import BaseModel

from vnetbench.workloads.base import Entry, Workload

# module -> attribute holding its {name: (options model, factory)} dict, and the names in it
_SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "vnetbench.workloads.probe": ("PROBE_WORKLOADS",
                                  ("rr", "crr", "stream", "gaps", "barrier", "media")),
    "vnetbench.workloads.oltp": ("OLTP_WORKLOADS", ("oltp",)),
    "vnetbench.workloads.mpi": ("MPI_WORKLOADS", ("mpi",)),
    "vnetbench.workloads.hadoop.workload": ("HADOOP_WORKLOADS", ("hadoop",)),
    "vnetbench.workloads.iperf3": ("IPERF3_WORKLOADS", ("iperf3",)),
    "vnetbench.workloads.sockperf": ("SOCKPERF_WORKLOADS", ("sockperf",)),
    "vnetbench.workloads.command": ("COMMAND_WORKLOADS", ("command",)),
    "vnetbench.workloads.concurrent": ("CONCURRENT_WORKLOADS", ("concurrent",)),
}


def _module_of() -> dict[str, str]:
    table: dict[str, str] = {}
    for module, (_, names) in _SOURCES.items():
        for name in names:
            if name in table:
                raise ValueError(f"workload {name!r} registered twice")
            table[name] = module
    return table


MODULE_OF = _module_of()
NAMES: tuple[str, ...] = tuple(MODULE_OF)


@cache
def _load(module: str) -> dict[str, Entry]:
    attr, names = _SOURCES[module]
    entries: dict[str, Entry] = getattr(importlib.import_module(module), attr)
    if set(entries) != set(names):
        raise ValueError(f"{module}.{attr} holds {sorted(entries)}, the registry expects "
                         f"{sorted(names)}")
    return entries


def entry(name: str) -> Entry:
    """(options model, factory) of workload ``name``; KeyError naming the known ones."""
    if name not in MODULE_OF:
        raise KeyError(f"unknown workload {name!r}; allowed: {', '.join(NAMES)}")
    return _load(MODULE_OF[name])[name]


def workload_model(name: str) -> type[BaseModel]:
    return entry(name)[0]


def workloads() -> dict[str, Entry]:
    """Every workload (imports every workload module)."""
    return {name: entry(name) for name in NAMES}


def workload_models() -> dict[str, type[BaseModel]]:
    return {name: model for name, (model, _) in workloads().items()}


def extra_nodes(options: list[BaseModel]) -> int:
    """Nodes the workloads need beyond the scenario's ``nodes`` (e.g. a Hadoop master)."""
    return max((int(getattr(type(o), "extra_nodes", 0)) for o in options), default=0)


def service_ports(options: list[BaseModel]) -> tuple[int, ...]:
    """Ports the workloads serve on (their ``port`` option, or what their options'
    ``service_ports()`` says: a command's ``ports``, a concurrent group's members'): a lab
    that must publish ports before anything runs (Docker's ``-p``) publishes these."""
    ports: set[int] = set()
    for o in options:
        declared = getattr(o, "service_ports", None)
        if callable(declared):
            ports.update(declared())
        elif isinstance(port := getattr(o, "port", None), int):
            ports.add(port)
    return tuple(sorted(ports))


def create_workload(name: str, options: BaseModel) -> Workload:
    return entry(name)[1](options)
