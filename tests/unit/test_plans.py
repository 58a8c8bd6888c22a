"""Plan generation for every layer (pure: no kernel): names, addresses, stages, shaping."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vnetbench.backends.catalog import LAYERS, get_layer
from vnetbench.backends.lab_plan import make_plan
from vnetbench.lab.plan import Daemon, IpBatch, IptablesRestore, Plan
from vnetbench.lab.topology import Addresses, LinkShape, Names, Topology
from vnetbench.layers.base import PlanContext
from vnetbench.layers.shaping import tbf_burst_bytes

CTX = PlanContext(run_dir=Path("/run/vnetbench/work/abcd"))
LOCAL = [name for name, cls in LAYERS.items() if cls.backend != "kubernetes"]
"""Layers that build on this machine (a Kubernetes layer's plan is a cluster's pods:
tests/unit/test_kubernetes.py)."""


def build(layer: str, hosts: int = 2, nodes: int = 4, link: LinkShape | None = None,
          features: dict[str, bool] | None = None) -> tuple[Plan, list]:
    topo = Topology(hosts=hosts, nodes=nodes, names=Names("abcd"),
                    addresses=Addresses("10.210"), link=link or LinkShape())
    ctx = PlanContext(run_dir=CTX.run_dir, features=features or {})
    lay = get_layer(layer)
    lab = make_plan(topo, lay, lay.options(), ctx, seed=1)
    return lab.kernel, list(lab.placements)


@pytest.mark.parametrize("layer", LOCAL)
def test_every_object_is_prefixed_and_short(layer: str) -> None:
    plan, placements = build(layer, hosts=3, nodes=128)
    assert all(ns.startswith("vnbabcd-") for ns in plan.namespaces)
    created = []
    for action in plan.actions():
        if isinstance(action, IpBatch):
            for line in action.lines:
                m = re.match(r"link add (\S+)", line)
                if m:
                    created.append(m.group(1))
                m = re.search(r"peer name (\S+)", line)
                if m:
                    created.append(m.group(1))
    assert created, "a layer creates links"
    assert all(n.startswith("vnbabcd") and len(n) <= 15 for n in created), created
    assert len(placements) == 128
    assert len({p.ip for p in placements}) == 128 or LAYERS[layer].shares_host_netns


@pytest.mark.parametrize("layer", LOCAL)
def test_stages_are_ordered_namespaces_first(layer: str) -> None:
    plan, _ = build(layer)
    titles = [s.title for s in plan.stages if s.actions]
    if LAYERS[layer].backend == "vmhost":  # the hosts' part runs inside their guests
        assert "host links" not in titles and plan.namespaces == ("vnbabcd-sw",)
        return
    assert titles.index("namespaces") < titles.index("host links")
    create = plan.stages[1].actions[0]
    assert isinstance(create, IpBatch) and create.netns is None
    assert all(line.startswith("netns add vnbabcd-") for line in create.lines)


def test_host_layer_has_no_node_namespaces() -> None:
    plan, placements = build("host", hosts=2, nodes=4)
    assert not any("-n" in ns.split("vnbabcd")[1] for ns in plan.namespaces)
    assert [p.netns for p in placements] == ["vnbabcd-h0", "vnbabcd-h1"] * 2
    assert placements[0].ip == placements[2].ip == "10.210.0.1"


def test_bridge_routes_between_host_subnets() -> None:
    plan, placements = build("bridge", hosts=2, nodes=4)
    h0 = next(a for a in plan.actions() if isinstance(a, IpBatch) and a.netns == "vnbabcd-h0")
    assert "route add 10.210.65.0/24 via 10.210.0.2" in h0.lines
    assert placements[1].ip == "10.210.65.2" and placements[2].ip == "10.210.64.3"


def test_vxlan_mtu_and_flood_entries() -> None:
    plan, placements = build("vxlan", hosts=3, nodes=3)
    text = plan.render()
    assert "mtu 1450 type vxlan id 4242 local 10.210.0.1 dev vnbabcdu0 dstport 4789" in text
    fdb = [a for a in plan.actions() if isinstance(a, IpBatch) and a.tool == "bridge"]
    assert len(fdb) == 3 and all(len(a.lines) == 2 for a in fdb)
    assert {p.ip for p in placements} == {"10.210.128.2", "10.210.128.3", "10.210.128.4"}


def test_nat_has_masquerade_and_dnat_chain() -> None:
    plan, _ = build("nat")
    rules = [a for a in plan.actions() if isinstance(a, IptablesRestore)]
    assert len(rules) == 2
    assert "-j MASQUERADE" in rules[0].rules and ":vnbabcd-dnat" in rules[0].rules


def test_routed_uses_proxy_arp_and_host_routes() -> None:
    plan, _placements = build("routed", hosts=1, nodes=2)
    text = plan.render()
    assert "route add 10.210.64.2/32 dev vnbabcdv0" in text
    assert "net.ipv4.conf.vnbabcdv0.proxy_arp = 1" in text
    assert "route add default via 169.254.1.1" in text


def test_wireguard_uses_wireguard_go_without_kernel_module() -> None:
    plan, _ = build("wireguard", hosts=2, nodes=2)
    daemons = [a for a in plan.actions() if isinstance(a, Daemon)]
    assert len(daemons) == 2 and daemons[0].argv[0] == "wireguard-go"
    assert any("allowed-ips" in cmd for cmd in daemons[0].then_cmds[0])
    assert "<secret>" in plan.render()
    kernel_plan, _ = build("wireguard", hosts=2, nodes=2, features={"wireguard": True})
    assert not any(isinstance(a, Daemon) for a in kernel_plan.actions())
    assert "type wireguard" in kernel_plan.render()


def test_userspace_forwarder_routes_peer_subnets() -> None:
    plan, _ = build("userspace", hosts=2, nodes=2)
    daemons = [a for a in plan.actions() if isinstance(a, Daemon)]
    assert "10.210.65.0/24=10.210.0.2:8285" in daemons[0].argv
    assert "route add 10.210.65.0/24 dev vnbabcdt0" in daemons[0].then


def test_link_shaping_without_netem_uses_linkem_and_tbf() -> None:
    plan, _ = build("bridge", link=LinkShape(delay=0.01, jitter=0.001, loss=0.005, rate=500e6))
    text = plan.render()
    assert "tbf rate 500000000bit" in text
    assert "--delay-us 10000" in text and "--jitter-us 1000" in text and "--loss 0.005000" in text
    assert "NFQUEUE --queue-num 0" in text
    assert "net.bridge.bridge-nf-call-iptables = 1" in text


def test_link_shaping_with_netem_uses_netem() -> None:
    plan, _ = build("bridge", link=LinkShape(delay=0.01), features={"netem": True})
    text = plan.render()
    assert "netem delay 10000us" in text and "linkem" not in text


def test_unshaped_link_adds_nothing() -> None:
    plan, _ = build("bridge")
    assert "tbf" not in plan.render() and "NFQUEUE" not in plan.render()


def test_tbf_burst_floor() -> None:
    assert tbf_burst_bytes(1e6) == 16 * 1024
    assert tbf_burst_bytes(1e9) == 625_000


def test_a_delay_per_host_pair_gets_an_emulator_per_direction_even_where_netem_exists() -> None:
    pairs = ((0, 1, 0.005), (0, 2, 0.010), (1, 2, 0.020))
    for netem in (False, True):
        plan, _ = build("bridge", hosts=3, nodes=3, features={"netem": netem},
                        link=LinkShape(jitter=0.001, rate=1e8, pair_delays=pairs))
        daemons = [a for a in plan.actions() if isinstance(a, Daemon)]
        delays = {d.role: d.argv[d.argv.index("--delay-us") + 1] for d in daemons}
        assert delays == {"link emulator 0->1": "5000", "link emulator 1->0": "5000",
                          "link emulator 0->2": "10000", "link emulator 2->0": "10000",
                          "link emulator 1->2": "20000", "link emulator 2->1": "20000"}
        text = plan.render()
        assert "netem" not in text and text.count("tbf rate 100000000bit") == 3
        assert "--physdev-in vnbabcds1 --physdev-out vnbabcds2 -j NFQUEUE" in text


def test_a_host_holds_as_many_nodes_as_its_bridge_has_ports() -> None:
    from vnetbench.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match="at most 1023 ports, so a host holds 1023"):
        build("bridge", hosts=1, nodes=1024)
    with pytest.raises(UnsupportedError, match="a host holds 1022 nodes"):
        build("vxlan", hosts=1, nodes=1023)  # its VXLAN device is a port too
    plan, placements = build("routed", hosts=1, nodes=2000)  # no bridge: the address plan
    assert len({p.ip for p in placements}) == 2000
    assert "route add 10.210.71.251/32 dev vnbabcdv1999" in plan.render()


def test_where_a_lab_runs_is_decided_once_when_the_scenario_becomes_a_spec() -> None:
    """``LabSpec.backend``: the layer's own backend, or ``machines`` where the scenario's
    hosts are real machines; the registry realises the spec with the backend it names."""
    from vnetbench.backends.registry import spec_backend_class
    from vnetbench.lab.spec import LabSpec
    from vnetbench.scenario.model import Scenario
    from vnetbench.scenario.specs import lab_spec

    s = Scenario.model_validate({"layers": ["host", "bridge", "docker-nat", "vm-bridge",
                                            "vmhost-bridge", "k8s-pod"]})
    assert {name: lab_spec(s, name).backend for name in s.layers} == {
        "host": "netns", "bridge": "netns", "docker-nat": "docker", "vm-bridge": "vm",
        "vmhost-bridge": "vmhost", "k8s-pod": "kubernetes"}
    on = Scenario.model_validate({"layers": ["host", "bridge"], "hosts": [
        {"ssh": "root@192.0.2.10", "underlay": "eth1"},
        {"ssh": "root@192.0.2.11", "underlay": "eth1"}]})
    assert {lab_spec(on, name).backend for name in on.layers} == {"machines"}
    from vnetbench.backends.catalog import get_layer

    assert spec_backend_class(lab_spec(on, "bridge"), get_layer("bridge")).name == "machines"
    # a spec written by hand takes the same rule; one that names a backend gets that one
    assert spec_backend_class(LabSpec("bridge"), get_layer("bridge")).name == "netns"
    assert spec_backend_class(LabSpec("bridge", backend="machines"),
                              get_layer("bridge")).name == "machines"
