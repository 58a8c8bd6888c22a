"""Moving this process into a lab node, for a program that then ``exec``s a command there as
if it had logged in: ``vnetbench exec`` and MPI's remote-shell agent.

``join_node`` writes this process's PID into each of the node's ``cgroup.procs`` files, pins
it to the node's CPUs (if it has any) and moves it into the node's network namespace
(``setns``: the process must be single-threaded). Each step's failure is an ``OSError``
that names the step.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from vnetbench.host.netns import enter_netns


def join_node(netns: str, cgroup_procs: Iterable[str] = (),
              cpus: Sequence[int] | None = None) -> None:
    """Join the node's cgroups, CPUs and network namespace ``netns`` (in that order)."""
    for procs_file in cgroup_procs:
        try:
            with open(procs_file, "w") as f:
                f.write(str(os.getpid()))
        except OSError as exc:
            raise OSError(exc.errno, f"joining {procs_file}: {exc.strerror or exc}") from exc
    if cpus:
        os.sched_setaffinity(0, cpus)
    try:
        enter_netns(netns)
    except OSError as exc:
        raise OSError(exc.errno, f"entering namespace {netns}: {exc.strerror or exc}") from exc
