"""The explicit registry of workloads: scenario key -> (options model, factory).

Probe modes (rr, crr, stream, gaps, barrier, media) come from ``vnetbench.workloads.probe.workload``;
``oltp`` (MariaDB + sysbench), ``mpi`` (OpenMPI), ``hadoop``, ``iperf3``, ``sockperf``,
``command`` (the user's own server and client) and ``concurrent`` (workloads run at once)
from their modules. The
table below names each workload's module, so a scenario imports only the modules it uses
(start-up time matters: ``vnetbench run`` is timed as a whole). A duplicate name is an
error. What a workload declares beyond its options' fields (nodes it needs, ports it
serves, labels...) is on its options model (``base.WorkloadOptions``).
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import NamedTuple

from vnetbench.host.programs import PodNeeds, Program, found_by, native, on_path
from vnetbench.workloads.base import Entry, Workload, WorkloadOptions


class Source(NamedTuple):
    """A workload module's line: the attribute holding its ``{name: (options model,
    factory)}`` dict, the names in it, the programs whose output becomes their samples (found
    only when looked for) and what those programs need in vnetbench's pod image (``pod``:
    none for the probe's, which the image always holds, and for what cannot run in a pod)."""

    attr: str
    names: tuple[str, ...]
    programs: tuple[Program, ...] = ()
    pod: PodNeeds | None = None


_SOURCES: dict[str, Source] = {
    "vnetbench.workloads.probe.workload": Source(
        "PROBE_WORKLOADS", ("rr", "crr", "stream", "gaps", "barrier", "media"),
        (native("vnetbench-probe"),)),
    "vnetbench.workloads.oltp": Source(
        "OLTP_WORKLOADS", ("oltp",),
        (on_path("mariadbd", "mariadb-server"), on_path("sysbench", "sysbench")),
        PodNeeds(("mariadbd", "mariadb-install-db", "my_print_defaults", "resolveip",
                  "sysbench"),
                 (("/usr/share/mysql", "/usr/share/mariadb"), ("/usr/share/sysbench",)))),
    "vnetbench.workloads.mpi.workload": Source(
        "MPI_WORKLOADS", ("mpi",),
        (on_path("mpirun", "openmpi-bin"),
         found_by("vnb-mpi-bench", "vnetbench.workloads.mpi.bench:find_mpi_bench", (),
                  digest=True)),
        PodNeeds(("mpirun", "orterun", "orted"),
                 (("/usr/lib/*/openmpi", "/usr/lib64/openmpi"),
                  ("/usr/lib/*/pmix2", "/usr/lib/*/pmix"), ("/usr/share/openmpi",),
                  ("/etc/openmpi",)),
                 (("/usr/local/bin/vnb-mpi-bench",
                   "vnetbench.workloads.mpi.bench:find_mpi_bench"),))),
    "vnetbench.workloads.hadoop.workload": Source(
        "HADOOP_WORKLOADS", ("hadoop",),
        (found_by("java", "vnetbench.workloads.hadoop.install:java_path", ("-version",),
                  package="default-jre-headless"),)),
    "vnetbench.workloads.iperf3": Source("IPERF3_WORKLOADS", ("iperf3",),
                                         (on_path("iperf3", "iperf3"),), PodNeeds(("iperf3",))),
    "vnetbench.workloads.sockperf": Source("SOCKPERF_WORKLOADS", ("sockperf",),
                                           (on_path("sockperf", "sockperf"),),
                                           PodNeeds(("sockperf",))),
    "vnetbench.workloads.command": Source("COMMAND_WORKLOADS", ("command",)),
    "vnetbench.workloads.concurrent": Source("CONCURRENT_WORKLOADS", ("concurrent",)),
}


def programs() -> tuple[Program, ...]:
    """The programs behind every workload's samples, each once (loads no workload module)."""
    found: dict[str, Program] = {}
    for source in _SOURCES.values():
        for program in source.programs:
            found.setdefault(program.name, program)
    return tuple(found.values())


def pod_needs() -> dict[str, PodNeeds]:
    """Workload name -> what its programs need in the pod image (loads no workload module)."""
    return {name: source.pod for source in _SOURCES.values() if source.pod is not None
            for name in source.names}


def _module_of() -> dict[str, str]:
    table: dict[str, str] = {}
    for module, source in _SOURCES.items():
        for name in source.names:
            if name in table:
                raise ValueError(f"workload {name!r} registered twice")
            table[name] = module
    return table


MODULE_OF = _module_of()
NAMES: tuple[str, ...] = tuple(MODULE_OF)


@cache
def _load(module: str) -> dict[str, Entry]:
    attr, names = _SOURCES[module].attr, _SOURCES[module].names
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


def workload_model(name: str) -> type[WorkloadOptions]:
    return entry(name)[0]


def workloads() -> dict[str, Entry]:
    """Every workload (imports every workload module)."""
    return {name: entry(name) for name in NAMES}


def workload_models() -> dict[str, type[WorkloadOptions]]:
    return {name: model for name, (model, _) in workloads().items()}


def extra_nodes(options: list[WorkloadOptions]) -> int:
    """Nodes the workloads need beyond the scenario's ``nodes`` (e.g. a Hadoop master)."""
    return max((type(o).extra_nodes for o in options), default=0)


def service_ports(options: list[WorkloadOptions]) -> tuple[int, ...]:
    """Ports the workloads serve on (each options' ``service_ports()``: its ``port``, a
    command's ``ports``, a concurrent group's members'): a lab that must publish ports before
    anything runs (Docker's ``-p``) publishes these."""
    return tuple(sorted({port for o in options for port in o.service_ports()}))


def create_workload(name: str, options: WorkloadOptions) -> Workload:
    return entry(name)[1](options)
