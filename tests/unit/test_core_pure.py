"""Pure pieces of the lab: WireGuard keys, address choice, cgroup limits, trial order."""

from __future__ import annotations

import base64
import ipaddress

import pytest

from vnetbench.errors import AddressError
from vnetbench.host.cgroups import limit_files
from vnetbench.host.state import choose_net
from vnetbench.lab.topology import Addresses, Names, Resources, Topology
from vnetbench.layers.wgkeys import public_key, x25519
from vnetbench.results.model import Sample
from vnetbench.run.context import converged
from vnetbench.run.design import plan_trials
from vnetbench.scenario.sweep import expand


def test_x25519_rfc7748_vector() -> None:
    scalar = bytes.fromhex("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4")
    u = bytes.fromhex("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c")
    assert x25519(scalar, u).hex() == (
        "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552")


def test_public_key_matches_rfc_alice() -> None:
    alice = bytes.fromhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    pub = public_key(base64.b64encode(alice).decode())
    assert base64.b64decode(pub).hex() == (
        "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")


def test_choose_net_avoids_routes_and_live_runs() -> None:
    routes = [ipaddress.ip_network("10.200.0.0/16"), ipaddress.ip_network("10.201.5.0/24")]
    assert choose_net({"10.202"}, routes) == "10.203"


def test_choose_net_gives_up_clearly() -> None:
    with pytest.raises(AddressError, match="no free /16"):
        choose_net(set(), [ipaddress.ip_network("0.0.0.0/1"),
                           ipaddress.ip_network("128.0.0.0/1")])


def test_cgroup_limits_v1_and_v2() -> None:
    r = Resources(cpus=0.5, memory=512 * 2**20, cpuset="0")
    assert limit_files(r, 1) == {
        "cpu/cpu.cfs_period_us": "100000", "cpu/cpu.cfs_quota_us": "50000",
        "memory/memory.limit_in_bytes": str(512 * 2**20), "cpuset/cpuset.cpus": "0"}
    assert limit_files(r, 2) == {"cpu.max": "50000 100000", "memory.max": str(512 * 2**20),
                                 "cpuset.cpus": "0"}
    assert limit_files(Resources(), 1) == {}


def test_topology_placement_round_robin() -> None:
    topo = Topology(hosts=2, nodes=5, names=Names("abcd"), addresses=Addresses("10.210"))
    assert [topo.host_of(j) for j in range(5)] == [0, 1, 0, 1, 0]
    assert topo.node_ids_on(0) == [0, 2, 4] and topo.slot_of(4) == 2
    with pytest.raises(ValueError, match="holds 8000 per host"):
        Topology(hosts=1, nodes=8001, names=Names("abcd"), addresses=Addresses("10.210"))


def test_address_plan_grows_past_250_nodes_per_host_and_keeps_smaller_layouts() -> None:
    small = Topology(hosts=2, nodes=500, names=Names("abcd"), addresses=Addresses("10.210"))
    a = small.addresses
    assert (a.span, a.host_subnet(1), a.subnet_node(1, 249), a.direct_node(1, 0)) == (
        1, "10.210.65.0/24", "10.210.65.251", "10.210.2.2")
    big = Topology(hosts=8, nodes=8000, names=Names("abcd"), addresses=Addresses("10.210"))
    b = big.addresses
    assert (b.span, b.host_prefix, b.host_subnet(7), b.host_gateway(7)) == (
        4, 22, "10.210.92.0/22", "10.210.92.1")
    for addr, subnet in ((b.subnet_node, b.host_subnet), (b.direct_node, b.direct_range)):
        seen = {addr(i, s) for i in range(8) for s in range(1000)}
        assert len(seen) == 8000  # one address per node
        for i in (0, 7):
            net = ipaddress.ip_network(subnet(i))
            inside = {ipaddress.ip_address(addr(i, s)) in net for s in range(1000)}
            assert inside == {True}
    assert len({b.overlay_node(j) for j in range(8000)}) == 8000
    lone = Topology(hosts=1, nodes=8000, names=Names("abcd"), addresses=Addresses("10.210"))
    assert lone.addresses.host_subnet(0) == "10.210.64.0/19"
    assert lone.addresses.direct_range(0) == "10.210.32.0/19"


def test_trials_interleave_every_round_and_are_seeded() -> None:
    sf = expand({"layers": ["host", "bridge", "vxlan"], "nodes": [2, 4], "repeat": 3, "seed": 5,
                 "workloads": [{"rr": {"duration": "1s"}}]})
    trials = plan_trials(sf, lambda p: list(p.scenario.layers))
    assert len(trials) == 24  # the baseline runs twice a round: A/A groups a and b
    for rep in range(3):
        round_ = [t for t in trials if t.repetition == rep]
        assert len({(t.layer, t.point.scenario.nodes, t.aa) for t in round_}) == 8
        assert sorted(t.labels().get("aa", "") for t in round_ if t.layer == "host") == [
            "a", "a", "b", "b"]
        assert all("aa" not in t.labels() for t in round_ if t.layer != "host")
    rr = [{"rr": {"duration": "1s"}}]
    plain = expand({"layers": ["host", "bridge"], "repeat": 2, "noise_floor": False,
                    "workloads": rr})
    assert len(plan_trials(plain, lambda p: list(p.scenario.layers))) == 4
    build_only = expand({"layers": ["host", "bridge"], "repeat": 2})  # measures nothing: no A/A
    assert len(plan_trials(build_only, lambda p: list(p.scenario.layers))) == 4
    again = plan_trials(sf, lambda p: list(p.scenario.layers))
    assert [(t.layer, t.point.axes["nodes"]) for t in trials] == [
        (t.layer, t.point.axes["nodes"]) for t in again]
    orders = {tuple((t.layer, t.point.axes["nodes"]) for t in trials if t.repetition == r)
              for r in range(3)}
    assert len(orders) > 1, "rounds should not all run in the same order"


def test_converged_judges_each_condition_on_its_own() -> None:
    (point,) = expand({"layers": ["bridge"], "nodes": 2}).points

    def elapsed(benchmark: str, values: list[float]) -> list[Sample]:
        return [Sample("elapsed_s", v, "s", {"layer": "bridge", "workload": "hadoop",
                                             "benchmark": benchmark, "repetition": str(i)})
                for i, v in enumerate(values)]

    steady = elapsed("teragen", [10.0, 10.1]) + elapsed("terasort", [20.0, 20.1])
    assert converged(steady, point, "bridge", 0.05)
    assert not converged(steady + elapsed("pi", [5.0, 8.0]), point, "bridge", 0.05)
    assert not converged(elapsed("pi", [5.0]), point, "bridge", 0.05)  # one value: unknown
    assert converged(steady, point, "vxlan", 0.05)  # nothing measured there: nothing to wait for


def test_applications_run_unpinned_unless_placement_is_set() -> None:
    from vnetbench.run.trial import effective_placement

    def first(raw: dict[str, object]) -> tuple[str, str]:
        return effective_placement(expand(raw).points[0].scenario)

    rr: dict[str, object] = {"layers": ["host"], "workloads": [{"rr": {"duration": "1s"}}]}
    assert first(rr) == ("cross", "")
    mpi = {"layers": ["host"], "nodes": 2, "workloads": [{"mpi": {}}]}
    mode, why = first(mpi)
    assert mode == "off" and "mpi run unpinned" in why
    assert first({**mpi, "platform": {"placement": "same"}}) == ("same", "")
    assert first({**rr, "resources": {"cpuset": "0"}})[0] == "off"
