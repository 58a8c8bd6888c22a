"""The explicit registry of workloads: scenario key -> (options model, factory).

Probe modes (rr, crr, stream, gaps, barrier, media) come from ``vnetbench.workloads.probe``;
``oltp`` (MariaDB + sysbench), ``mpi`` (OpenMPI) and ``hadoop`` from their modules. A
duplicate name is an error. An options model may declare ``extra_nodes`` (a ClassVar): the
lab then has that many nodes beyond the scenario's ``nodes`` (Hadoop's master).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from pydantic import BaseModel

from vnetbench.workloads.base import Workload

Factory = Callable[[BaseModel], Workload]


@lru_cache(maxsize=1)
def workloads() -> dict[str, tuple[type[BaseModel], Factory]]:
    from vnetbench.workloads.hadoop.workload import HADOOP_WORKLOADS
    from vnetbench.workloads.mpi import MPI_WORKLOADS
    from vnetbench.workloads.oltp import OLTP_WORKLOADS
    from vnetbench.workloads.probe import PROBE_WORKLOADS

    registry: dict[str, tuple[type[BaseModel], Factory]] = {}
    for source in (PROBE_WORKLOADS, OLTP_WORKLOADS, MPI_WORKLOADS, HADOOP_WORKLOADS):
        for name, entry in source.items():
            if name in registry:
                raise ValueError(f"workload {name!r} registered twice")
            registry[name] = entry
    return registry


def workload_models() -> dict[str, type[BaseModel]]:
    return {name: model for name, (model, _) in workloads().items()}


def extra_nodes(options: list[BaseModel]) -> int:
    """Nodes the workloads need beyond the scenario's ``nodes`` (e.g. a Hadoop master)."""
    return max((int(getattr(type(o), "extra_nodes", 0)) for o in options), default=0)


def create_workload(name: str, options: BaseModel) -> Workload:
    return workloads()[name][1](options)
