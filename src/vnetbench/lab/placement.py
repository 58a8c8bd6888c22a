"""CPU placement of a trial's processes: which CPUs each node and each host's daemons may use.

The same rule holds for every layer, so no layer gains or loses by landing on other cores
than its baseline did (on this 2-core VM, a round trip measured with client and server on
one core differs from one measured across cores by tens of microseconds):

* ``cross`` (default): node ``i`` runs on ``cpus[i % len(cpus)]`` (the probe's server, node 0,
  on the first CPU, its client, node 1, on the second); the daemons of emulated host ``h``
  (wireguard-go, the userspace tunnel) run on the CPU of the first node placed on that host,
  so a layer's datapath work stays on its own side as it would on real machines;
* ``same``: every node and daemon on ``cpus[0]``;
* ``off``: no pinning (the kernel's scheduler decides, as before).

Daemons of the underlay switch (the link emulator) serve every layer alike and may use all of
``cpus``. Pure: nothing here touches the machine except reading the CPUs this process may use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

PlacementMode = Literal["cross", "same", "off"]


def usable_cpus() -> tuple[int, ...]:
    """The CPUs this process may run on, ascending."""
    return tuple(sorted(os.sched_getaffinity(0)))


@dataclass(frozen=True)
class CpuPlacement:
    """CPUs per node index and per emulated host (daemons); empty mappings mean unpinned."""

    mode: PlacementMode
    cpus: tuple[int, ...]
    nodes: dict[int, tuple[int, ...]] = field(default_factory=dict)
    hosts: dict[int, tuple[int, ...]] = field(default_factory=dict)

    @property
    def pinned(self) -> bool:
        return bool(self.nodes)

    def for_node(self, index: int) -> tuple[int, ...] | None:
        return self.nodes.get(index)

    def for_host(self, host: int) -> tuple[int, ...] | None:
        return self.hosts.get(host)

    def for_switch(self) -> tuple[int, ...] | None:
        return self.cpus if self.pinned else None

    def describe(self) -> str:
        if not self.pinned:
            return "not pinned"
        nodes = ", ".join(f"n{i}->cpu{','.join(map(str, c))}" for i, c in sorted(self.nodes.items()))
        hosts = ", ".join(f"h{h}->cpu{','.join(map(str, c))}" for h, c in sorted(self.hosts.items()))
        return f"{self.mode}: nodes {nodes}; host daemons {hosts}"


def plan_placement(mode: PlacementMode, node_hosts: list[int],
                   cpus: tuple[int, ...] | None = None) -> CpuPlacement:
    """Placement for nodes whose hosts are ``node_hosts`` (index = node index).

    ``cpus`` defaults to every CPU this process may use; with a single CPU ``cross`` is the
    same as ``same``.
    """
    chosen = tuple(cpus) if cpus else usable_cpus()
    if mode == "off" or not chosen:
        return CpuPlacement("off", chosen)
    if mode == "same":
        one: tuple[int, ...] = (chosen[0],)
        return CpuPlacement(mode, chosen, {i: one for i in range(len(node_hosts))},
                            {h: one for h in set(node_hosts)})
    nodes: dict[int, tuple[int, ...]] = {i: (chosen[i % len(chosen)],)
                                         for i in range(len(node_hosts))}
    hosts: dict[int, tuple[int, ...]] = {}
    for i, h in enumerate(node_hosts):
        hosts.setdefault(h, nodes[i])
    return CpuPlacement(mode, chosen, nodes, hosts)
