"""Unit tests of CPU placement plans (pure: no process is pinned here).

One rule for every layer: ``cross`` puts node i on ``cpus[i % len(cpus)]`` and a host's
daemons on the CPU of that host's first node; ``same`` puts everything on ``cpus[0]``;
``off`` pins nothing.
"""

from __future__ import annotations

import os

import pytest

from vnetbench.lab import placement
from vnetbench.lab.placement import CpuPlacement, PlacementMode, plan_placement, usable_cpus


def _round_robin(hosts: int, nodes: int) -> list[int]:
    """Node j's host, as the topology assigns it (j % hosts)."""
    return [j % hosts for j in range(nodes)]


def test_cross_two_hosts_two_nodes() -> None:
    p = plan_placement("cross", _round_robin(2, 2), (0, 1))
    assert p.pinned and p.mode == "cross"
    assert (p.for_node(0), p.for_node(1)) == ((0,), (1,))
    assert (p.for_host(0), p.for_host(1)) == ((0,), (1,))
    assert p.for_switch() == (0, 1)


def test_cross_one_host_two_nodes_server_and_client_apart() -> None:
    p = plan_placement("cross", _round_robin(1, 2), (0, 1))
    assert (p.for_node(0), p.for_node(1)) == ((0,), (1,))
    assert p.hosts == {0: (0,)}  # the host's daemons follow its first node
    assert p.for_host(1) is None


def test_cross_two_hosts_four_nodes_on_two_cpus() -> None:
    p = plan_placement("cross", _round_robin(2, 4), (0, 1))
    assert [p.for_node(i) for i in range(4)] == [(0,), (1,), (0,), (1,)]
    assert p.hosts == {0: (0,), 1: (1,)}


def test_cross_four_nodes_on_four_cpus() -> None:
    p = plan_placement("cross", _round_robin(2, 4), (0, 1, 2, 3))
    assert [p.for_node(i) for i in range(4)] == [(0,), (1,), (2,), (3,)]
    assert p.hosts == {0: (0,), 1: (1,)}


def test_host_daemons_go_to_the_cpu_of_the_hosts_first_node() -> None:
    # nodes 0, 1 on host 0 and nodes 2, 3 on host 1: host 1's first node is node 2
    p = plan_placement("cross", [0, 0, 1, 1], (4, 5, 6, 7))
    assert [p.for_node(i) for i in range(4)] == [(4,), (5,), (6,), (7,)]
    assert p.hosts == {0: (4,), 1: (6,)}
    # hosts listed out of order: still the first node of each host (by node index)
    q = plan_placement("cross", [1, 0, 1, 0], (0, 1))
    assert q.hosts == {1: (0,), 0: (1,)}


def test_explicit_cpus_keep_their_order() -> None:
    p = plan_placement("cross", _round_robin(2, 2), (7, 3))
    assert (p.for_node(0), p.for_node(1)) == ((7,), (3,))
    assert p.cpus == (7, 3) and p.for_switch() == (7, 3)


def test_single_cpu_cross_is_same() -> None:
    p = plan_placement("cross", _round_robin(2, 4), (3,))
    assert all(p.for_node(i) == (3,) for i in range(4))
    assert p.hosts == {0: (3,), 1: (3,)}


@pytest.mark.parametrize(("hosts", "nodes"), [(1, 2), (2, 2), (2, 4)])
def test_same_puts_everything_on_the_first_cpu(hosts: int, nodes: int) -> None:
    p = plan_placement("same", _round_robin(hosts, nodes), (2, 5))
    assert p.pinned and p.mode == "same"
    assert all(p.for_node(i) == (2,) for i in range(nodes))
    assert p.hosts == {h: (2,) for h in range(hosts)}
    assert p.for_switch() == (2, 5)


@pytest.mark.parametrize(("hosts", "nodes"), [(1, 2), (2, 2), (2, 4)])
def test_off_pins_nothing(hosts: int, nodes: int) -> None:
    p = plan_placement("off", _round_robin(hosts, nodes), (0, 1))
    assert not p.pinned and p.mode == "off"
    assert all(p.for_node(i) is None for i in range(nodes))
    assert all(p.for_host(h) is None for h in range(hosts))
    assert p.for_switch() is None
    assert p.describe() == "not pinned"


@pytest.mark.parametrize("mode", ["cross", "same"])
@pytest.mark.parametrize(("hosts", "nodes"), [(1, 1), (1, 2), (2, 2), (2, 4), (3, 7)])
def test_every_node_and_host_is_placed_on_one_given_cpu(mode: PlacementMode, hosts: int,
                                                       nodes: int) -> None:
    cpus = (1, 0, 3)
    p = plan_placement(mode, _round_robin(hosts, nodes), cpus)
    assert set(p.nodes) == set(range(nodes))
    assert set(p.hosts) == set(range(min(hosts, nodes)))
    for cpu in (*p.nodes.values(), *p.hosts.values()):
        assert len(cpu) == 1 and cpu[0] in cpus


def test_default_cpus_are_the_usable_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    assert usable_cpus() == tuple(sorted(os.sched_getaffinity(0)))
    monkeypatch.setattr(placement, "usable_cpus", lambda: (2, 6))
    p = plan_placement("cross", _round_robin(1, 3))
    assert p.cpus == (2, 6)
    assert [p.for_node(i) for i in range(3)] == [(2,), (6,), (2,)]
    assert plan_placement("cross", _round_robin(1, 2), ()).cpus == (2, 6)  # empty: default


def test_no_usable_cpu_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(placement, "usable_cpus", lambda: ())
    p = plan_placement("cross", _round_robin(2, 2))
    assert not p.pinned and p.mode == "off"


def test_describe_names_every_node_and_host() -> None:
    text = plan_placement("cross", _round_robin(2, 4), (0, 1)).describe()
    assert text.startswith("cross:")
    for part in ("n0->cpu0", "n1->cpu1", "n2->cpu0", "n3->cpu1", "h0->cpu0", "h1->cpu1"):
        assert part in text


def test_default_placement_is_unpinned() -> None:
    p = CpuPlacement("off", ())
    assert not p.pinned and p.for_node(0) is None and p.for_switch() is None
