"""The embedded backend: every node is a network namespace with cgroups of its own.

The nodes' cgroups are made on a thread while the kernel plan is applied (nothing in the
plan depends on them); then each node becomes a ``NamespaceNode``. A node without limits
gets its (accounting) cgroup only when a process first joins it.
"""

from __future__ import annotations

from vnetbench.backends.base import Backend, LabContext
from vnetbench.backends.netns.node import NamespaceNode
from vnetbench.host.netns import submit_in_thread
from vnetbench.host.node import Node
from vnetbench.host.processes import wait_uninterrupted


class NetnsBackend(Backend):
    """Nodes as namespaces of this kernel (the default)."""

    name = "netns"
    sessions = "shared"
    joinable = True

    def realise(self, lab: LabContext) -> list[Node]:
        limits = lab.topo.resources
        lazy = not limits.any  # accounting only: made when a process first joins the node

        def make_nodes() -> list[Node]:
            return [NamespaceNode(p.index, p.host, p.netns, p.ip, p.ifname,
                                  lab.cgroups.create(f"n{p.index}", limits, lazy=lazy),
                                  tracker=lab.tracker)
                    for p in lab.plan.placements]

        nodes = submit_in_thread(make_nodes)
        try:
            lab.apply_kernel_plan()
        finally:
            # wait even if Ctrl-C lands now: teardown must not race the cgroups' creation
            made = wait_uninterrupted(nodes)
        return made
