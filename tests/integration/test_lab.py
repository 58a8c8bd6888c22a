"""The lab on real namespaces: every layer connects same-host and cross-host, over the
path it claims; shaping and cgroup limits take effect; nothing is left behind."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vnetbench.backends.catalog import LAYERS
from vnetbench.backends.lab import open_lab
from vnetbench.host.features import kernel_features
from vnetbench.host.netns import read_in_netns
from vnetbench.lab.spec import LabSpec
from vnetbench.lab.topology import LinkShape, Resources

from .labtools import echo, echo_on_the_wire, start_echo

pytestmark = pytest.mark.root

MARKER = "VNETBENCH-PLAINTEXT-MARKER-0123456789"


def supported() -> list[str]:
    features = kernel_features()
    return [n for n, cls in LAYERS.items() if all(features.get(f) for f in cls.requires)]


@pytest.mark.parametrize("layer", [n for n, cls in LAYERS.items()
                                   if n != "ipvlan" and cls.backend == "netns"])
def test_nodes_reach_each_other_same_host_and_across(layer: str, tmp_path: Path) -> None:
    if layer not in supported():
        pytest.skip(f"{layer} unsupported on this kernel")
    with open_lab(LabSpec(layer, hosts=2, nodes=4)) as lab:
        n0, n1, n2 = lab.nodes[0], lab.nodes[1], lab.nodes[2]
        assert n0.host == n2.host != n1.host
        port = start_echo(lab, n0)
        assert echo(lab, n2, n0, port, "same-host") == "same-host"
        assert echo(lab, n1, n0, port, "cross-host") == "cross-host"
        # every interface we made carries the run's prefix and fits the 15-char limit
        for names in lab.interfaces().values():
            assert all(n.startswith(lab.prefix) and len(n) <= 15 for n in names)


def _cross_host_capture(layer: str, tmp_path: Path) -> tuple[str, bytes, object]:
    with open_lab(LabSpec(layer, hosts=2, nodes=2)) as lab:
        server, client = lab.nodes[0], lab.nodes[1]
        summary, raw = echo_on_the_wire(lab, client, server, MARKER, tmp_path / "wire.pcap")
        extra: object = None
        if layer == "nat":
            host = lab.names.host_ns(server.host)
            extra = subprocess.run(
                ["ip", "netns", "exec", host, "iptables", "-t", "nat", "-L",
                 f"{lab.prefix}-dnat", "-v", "-x", "-n"], capture_output=True, text=True).stdout
        if layer == "userspace":
            extra = lab.daemon_logs()
        return summary, raw, extra


def test_vxlan_packets_cross_the_underlay_encapsulated(tmp_path: Path) -> None:
    summary, raw, _ = _cross_host_capture("vxlan", tmp_path)
    assert "VXLAN" in summary or ".4789:" in summary, summary
    assert MARKER.encode() in raw  # VXLAN does not encrypt
    assert not re.search(r"\.7100: Flags", summary.split("VXLAN")[0] if "VXLAN" in summary else "")


def test_wireguard_underlay_carries_only_ciphertext(tmp_path: Path) -> None:
    summary, raw, _ = _cross_host_capture("wireguard", tmp_path)
    assert ".51820:" in summary, summary
    assert MARKER.encode() not in raw, "plaintext payload seen on the wire"


def test_bridge_underlay_carries_plaintext_unencapsulated(tmp_path: Path) -> None:
    summary, raw, _ = _cross_host_capture("bridge", tmp_path)
    assert ".7100:" in summary and MARKER.encode() in raw
    assert "4789" not in summary and "51820" not in summary


def test_routed_is_plain_routing(tmp_path: Path) -> None:
    summary, raw, _ = _cross_host_capture("routed", tmp_path)
    assert ".7100:" in summary and MARKER.encode() in raw


def test_nat_goes_through_dnat(tmp_path: Path) -> None:
    summary, _raw, counters = _cross_host_capture("nat", tmp_path)
    assert isinstance(counters, str)
    dnat = [line for line in counters.splitlines() if "DNAT" in line]
    assert dnat and int(dnat[0].split()[0]) > 0, counters
    # on the wire the client reaches the server's *host* address, not the node's
    assert re.search(r"> \d+\.\d+\.0\.1\.7100:", summary), summary


def test_userspace_forwarder_carries_the_traffic(tmp_path: Path) -> None:
    summary, _raw, logs = _cross_host_capture("userspace", tmp_path)
    assert ".8285:" in summary, summary
    assert isinstance(logs, dict)


def test_userspace_forwarder_counters_rise(tmp_path: Path) -> None:
    import json

    with open_lab(LabSpec("userspace", hosts=2, nodes=2)) as lab:
        port = start_echo(lab, lab.nodes[0])
        for k in range(5):
            assert echo(lab, lab.nodes[1], lab.nodes[0], port, f"m{k}") == f"m{k}"
        tunnels = [p for i in range(2)
                   if (p := lab.daemon_process(f"tunnel {lab.names.tun(i)}")) is not None]
        assert tunnels, lab.daemon_logs()
        for p in tunnels:
            lab.stop(p)
        final = json.loads((lab.work_dir / "tunnel1.json").read_text())
    assert final["tun_to_udp_packets"] >= 5 * 3, final
    assert final["udp_to_tun_packets"] >= 5 * 3


def test_macvlan_nodes_sit_on_the_underlay() -> None:
    with open_lab(LabSpec("macvlan", hosts=2, nodes=2)) as lab:
        node = lab.nodes[0]
        out = node.run(["ip", "-d", "link", "show", node.ifname]).stdout
        assert "macvlan mode bridge" in out
        assert node.ip.rsplit(".", 2)[0] == lab.topo.addresses.host_underlay(0).rsplit(".", 2)[0]


def test_host_layer_nodes_share_the_host_namespace() -> None:
    with open_lab(LabSpec("host", hosts=1, nodes=2)) as lab:
        assert lab.nodes[0].netns == lab.nodes[1].netns == lab.names.host_ns(0)
        assert lab.listen_port(lab.nodes[0], 7000) != lab.listen_port(lab.nodes[1], 7000)


def _ping_rtt_ms(lab: object, count: int = 20) -> float:
    from vnetbench.backends.lab import Lab

    assert isinstance(lab, Lab)
    out = lab.nodes[0].run(["ping", "-n", "-q", "-c", str(count), "-i", "0.02",
                            lab.nodes[1].ip], timeout=60).stdout
    return float(out.strip().splitlines()[-1].split("=")[1].split("/")[1])


@pytest.mark.parametrize("layer", ["bridge", "macvlan"])
def test_configured_20ms_delay_measures_20ms_each_way(layer: str) -> None:
    with open_lab(LabSpec(layer, hosts=2, nodes=2)) as lab:
        _ping_rtt_ms(lab, 3)
        base = _ping_rtt_ms(lab)
    with open_lab(LabSpec(layer, hosts=2, nodes=2, link=LinkShape(delay=0.020))) as lab:
        _ping_rtt_ms(lab, 3)  # ARP resolved
        shaped = _ping_rtt_ms(lab)
    one_way = (shaped - base) / 2  # the delay applies to each direction of the wire
    assert abs(one_way - 20.0) <= 0.05 * 20.0, (base, shaped)


def test_configured_jitter_spreads_rtt() -> None:
    with open_lab(LabSpec("bridge", hosts=2, nodes=2, link=LinkShape(delay=0.005, jitter=0.002))) as lab:
        lab.nodes[0].run(["ping", "-n", "-q", "-c", "2", lab.nodes[1].ip], timeout=20)
        out = lab.nodes[0].run(["ping", "-n", "-q", "-c", "40", "-i", "0.02", lab.nodes[1].ip],
                               timeout=60).stdout
    mdev = float(out.strip().splitlines()[-1].split("=")[1].split("/")[3].split()[0])
    assert 1.0 < mdev < 5.0, out  # two independent 2 ms jitters: ~2.8 ms spread


def test_configured_loss_is_measured() -> None:
    loss = 0.2
    with open_lab(LabSpec("bridge", hosts=2, nodes=2, link=LinkShape(loss=loss))) as lab:
        out = lab.nodes[0].run(["ping", "-n", "-q", "-c", "400", "-i", "0.002", "-W", "1",
                                lab.nodes[1].ip], timeout=60, check=False).stdout
    lost = float(re.search(r"([\d.]+)% packet loss", out).group(1)) / 100  # type: ignore[union-attr]
    expected = 1 - (1 - loss) ** 2  # a ping is lost if either direction drops it
    assert abs(lost - expected) < 0.08, (lost, expected)


def test_configured_rate_limits_throughput() -> None:
    rate = 50e6
    with open_lab(LabSpec("bridge", hosts=2, nodes=2, link=LinkShape(rate=rate))) as lab:
        server, client = lab.nodes[0], lab.nodes[1]
        server.spawn(["iperf3", "-s", "-p", "5201"])
        server.wait_listening(5201)
        out = client.run(["iperf3", "-c", server.ip, "-p", "5201", "-t", "2", "-J"],
                         timeout=30).stdout
    import json

    bps = json.loads(out)["end"]["sum_received"]["bits_per_second"]
    assert 0.7 * rate < bps < 1.05 * rate, bps


def test_cpu_capped_node_gets_its_quota() -> None:
    busy = "import time\nend = time.time() + 1.0\nwhile time.time() < end: pass\n"
    with open_lab(LabSpec("bridge", hosts=1, nodes=1, resources=Resources(cpus=0.25))) as lab:
        node = lab.nodes[0]
        assert node.cgroup is not None
        before, start = node.cgroup.cpu_usage_ns(), time.monotonic()
        node.run([sys.executable, "-c", busy], timeout=30)
        used = (node.cgroup.cpu_usage_ns() - before) / 1e9
        wall = time.monotonic() - start  # the interpreter's start is capped too, and takes a
    assert 0.15 < used / wall < 0.30, (used, wall)  # while on a busy machine


def test_memory_limit_is_set() -> None:
    with open_lab(LabSpec("bridge", hosts=1, nodes=1, resources=Resources(memory=256 * 2**20))) as lab:
        node = lab.nodes[0]
        assert node.cgroup is not None
        limits = [d / "memory.limit_in_bytes" for d in node.cgroup.dirs]
        limits += [d / "memory.max" for d in node.cgroup.dirs]
        values = [int(p.read_text()) for p in limits if p.exists()]
        assert 256 * 2**20 in values


def test_two_labs_at_once_do_not_collide() -> None:
    with open_lab(LabSpec("bridge", hosts=1, nodes=2)) as a, open_lab(LabSpec("bridge", hosts=1, nodes=2)) as b:
        assert a.run_id != b.run_id and a.topo.addresses.net != b.topo.addresses.net
        pa, pb = start_echo(a, a.nodes[0]), start_echo(b, b.nodes[0])
        assert echo(a, a.nodes[1], a.nodes[0], pa, "a") == "a"
        assert echo(b, b.nodes[1], b.nodes[0], pb, "b") == "b"


def test_lab_sysctls_are_explicit_and_recorded() -> None:
    with open_lab(LabSpec("routed", hosts=2, nodes=2)) as lab:
        host = lab.names.host_ns(0)
        assert lab.sysctls[host]["net.ipv4.ip_forward"] == "1"
        veth = lab.names.veth_host(0)
        assert lab.sysctls[host][f"net.ipv4.conf.{veth}.proxy_arp"] == "1"
        assert read_in_netns(None, "/proc/sys/net/ipv4/ip_forward").strip() in {"0", "1"}


def test_root_namespace_is_untouched() -> None:
    def root_state() -> tuple[str, str, str]:
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        routes = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
        rules = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
        rules = "\n".join(r for r in rules.splitlines() if not r.startswith("#"))
        return links, routes, rules

    before = root_state()
    with open_lab(LabSpec("nat", hosts=2, nodes=2, link=LinkShape(delay=0.001))) as lab:
        port = start_echo(lab, lab.nodes[0])
        echo(lab, lab.nodes[1], lab.nodes[0], port, "x")
        during = root_state()
    assert during == before
    assert root_state() == before
