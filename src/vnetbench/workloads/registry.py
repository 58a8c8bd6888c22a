"""The explicit registry of workloads: scenario key -> (options model, factory).

Probe modes (rr, crr, stream, gaps, barrier, media) come from ``vnetbench.workloads.probe``.
A duplicate name is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from pydantic import BaseModel

from vnetbench.workloads.base import Workload

Factory = Callable[[BaseModel], Workload]


@lru_cache(maxsize=1)
def workloads() -> dict[str, tuple[type[BaseModel], Factory]]:
    registry: dict[str, tuple[type[BaseModel], Factory]] = {}
    sources: list[dict[str, tuple[type[BaseModel], Factory]]] = []
    try:
        from vnetbench.workloads.probe import PROBE_WORKLOADS
    except ImportError:  # the probe wrappers are not installed in this tree
        PROBE_WORKLOADS = {}
    sources.append(PROBE_WORKLOADS)
    from vnetbench.workloads.mpi import MPI_WORKLOADS
    from vnetbench.workloads.oltp import OLTP_WORKLOADS
    sources += [OLTP_WORKLOADS, MPI_WORKLOADS]
    from vnetbench.workloads.hadoop.workload import HADOOP_WORKLOADS
    sources.append(HADOOP_WORKLOADS)
    for source in sources:
        for name, entry in source.items():
            if name in registry:
                raise ValueError(f"workload {name!r} registered twice")
            registry[name] = entry
    return registry


def workload_models() -> dict[str, type[BaseModel]]:
    return {name: model for name, (model, _) in workloads().items()}


def create_workload(name: str, options: BaseModel) -> Workload:
    return workloads()[name][1](options)
