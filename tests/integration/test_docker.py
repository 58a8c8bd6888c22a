"""The docker backend on real engines: every Docker network mode runs rr and stream across
two emulated hosts over the path it claims, Docker's resource flags bind the node's
processes, and nothing of the run (container, network, image, engine, chain, cgroup,
directory) is left behind, also after SIGKILL + ``vnetbench clean``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from vnetbench.backends.docker.engine import find_dockerd
from vnetbench.backends.docker.modes import DOCKER_LAYERS
from vnetbench.backends.lab import Lab, open_lab
from vnetbench.errors import MissingToolError
from vnetbench.host.netns import netns_inode, pids_in_netns
from vnetbench.lab.spec import LabSpec
from vnetbench.lab.topology import Resources
from vnetbench.results.model import Sample
from vnetbench.workloads.probe.workload import RrOptions, StreamOptions, rr_workload, stream_workload

from ..conftest import lab_leftovers, signals_at_default
from .labtools import echo_on_the_wire

pytestmark = pytest.mark.root
MODES = [cls.name for cls in DOCKER_LAYERS]
MARKER = "VNETBENCH-DOCKER-MARKER-0123456789"
PORT = 7000


@pytest.fixture(scope="module", autouse=True)
def engine_installed() -> None:
    try:
        find_dockerd()
    except MissingToolError as exc:  # scripts/setup.sh installs it; CI must have it
        pytest.fail(str(exc))


def _probe(lab: Lab, mode: str, tmp: Path) -> list[Sample]:
    wl = (rr_workload(RrOptions(duration=1.0)) if mode == "rr"
          else stream_workload(StreamOptions(duration=1.0)))
    wl.prepare(lab)
    try:
        return wl.run(lab, tmp)
    finally:
        wl.cleanup(lab)


def _value(samples: list[Sample], metric: str) -> float:
    return next(s.value for s in samples if s.metric == metric)


def _root_snapshot() -> tuple[str, str]:
    rules = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    rules = "\n".join(line for line in rules.splitlines() if not line.startswith("#"))
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return rules, "\n".join(sorted(line.split(":")[1] for line in links.splitlines()))


def _engine_processes(run_id: str) -> list[int]:
    """Processes in the run's cgroups: engines, containerd, shims, docker-proxy (all in its
    infra cgroup) and containers' processes (in their own cgroups under the run's)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cgroups = (entry / "cgroup").read_text()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if f"/vnb{run_id}/" in cgroups and state != "Z":  # a zombie waits for init
                found.append(int(entry.name))
    return found


def _assert_gone(run_id: str) -> None:
    assert [x for x in lab_leftovers() if f"vnb{run_id}" in x] == []
    assert _engine_processes(run_id) == []
    assert not Path(f"/var/tmp/vnetbench/{run_id}").exists()
    assert not Path(f"/run/vnetbench/{run_id}.json").exists()


@pytest.mark.parametrize("mode", MODES)
def test_rr_and_stream_across_hosts(mode: str, tmp_path: Path) -> None:
    before = _root_snapshot()
    with open_lab(LabSpec(mode, hosts=2, nodes=2, services=[PORT])) as lab:
        run_id = lab.run_id
        server, client = lab.nodes
        assert server.host != client.host
        assert _engine_processes(run_id), "each host runs its own engine"
        rr = _probe(lab, "rr", tmp_path)
        stream = _probe(lab, "stream", tmp_path)
        assert _value(rr, "tps") > 100 and 0 < _value(rr, "rtt_p50_us") < 20_000
        assert _value(stream, "goodput_bps") > 1e7
        assert _root_snapshot() == before, "the root namespace must not change"
    assert _root_snapshot() == before
    _assert_gone(run_id)


def _kind(netns: str, device: str) -> str:
    out = subprocess.run(["ip", "-n", netns, "-j", "-d", "link", "show", "dev", device],
                         capture_output=True, text=True, check=True).stdout
    return str(json.loads(out)[0].get("linkinfo", {}).get("info_kind", ""))


def test_overlay_traffic_is_vxlan_on_the_underlay(tmp_path: Path) -> None:
    with open_lab(LabSpec("docker-overlay", hosts=2, nodes=2, services=[PORT])) as lab:
        server, client = lab.nodes
        overlay_ns = f"{lab.prefix}-o{server.host}"
        assert overlay_ns in lab.namespaces()
        vxlan = [d for d in lab.interfaces()[overlay_ns] if _kind(overlay_ns, d) == "vxlan"]
        assert vxlan, lab.interfaces()[overlay_ns]
        summary, raw = echo_on_the_wire(lab, client, server, MARKER, tmp_path / "wire.pcap")
    assert ".4789: VXLAN" in summary, summary
    assert MARKER.encode() in raw  # inside the VXLAN payload, not encrypted
    assert ".7100: Flags" not in summary.split("VXLAN")[0]


def test_bridge_is_routed_plaintext_through_docker0(tmp_path: Path) -> None:
    with open_lab(LabSpec("docker-bridge", hosts=2, nodes=2, services=[PORT])) as lab:
        server, client = lab.nodes
        host = lab.names.host_ns(server.host)
        assert "docker0" in lab.interfaces()[host]
        summary, raw = echo_on_the_wire(lab, client, server, MARKER, tmp_path / "wire.pcap")
    # container to container at their own addresses: routed, not masqueraded
    assert f"{client.ip}." in summary and f"{server.ip}.7100: Flags" in summary, summary
    assert MARKER.encode() in raw and "4789" not in summary


def _proxy_cpu_ticks(host_ns: str) -> dict[int, int]:
    inode = netns_inode(host_ns)
    assert inode is not None
    ticks = {}
    for pid in pids_in_netns({inode}):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            continue
        if "(docker-proxy)" in stat:
            fields = stat.rsplit(")", 1)[1].split()
            ticks[pid] = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks


def test_proxy_mode_relays_through_docker_proxy(tmp_path: Path) -> None:
    with open_lab(LabSpec("docker-proxy", hosts=2, nodes=2, services=[PORT])) as lab:
        server = lab.nodes[0]
        host = lab.names.host_ns(server.host)
        before = _proxy_cpu_ticks(host)
        assert before, "docker-proxy serves the published ports"
        rr = _probe(lab, "rr", tmp_path)
        after = _proxy_cpu_ticks(host)
        nat = subprocess.run(["ip", "netns", "exec", host, "iptables-save", "-t", "nat"],
                             capture_output=True, text=True).stdout
    assert _value(rr, "tps") > 100
    used = sum(after.get(pid, 0) - t for pid, t in before.items())
    assert used >= 5, f"docker-proxy used {used} ticks relaying {_value(rr, 'tps'):.0f} tps"
    assert "DNAT" not in nat, "no DNAT rule may short-cut the proxy"


def test_nat_mode_is_dnat_without_proxy(tmp_path: Path) -> None:
    with open_lab(LabSpec("docker-nat", hosts=2, nodes=2, services=[PORT])) as lab:
        server, client = lab.nodes
        host = lab.names.host_ns(server.host)
        assert _proxy_cpu_ticks(host) == {}, "userland proxy is off"
        addr, port = lab.endpoint(client, server, PORT)
        assert addr == lab.topo.addresses.host_underlay(server.host) and port != 0
        _probe(lab, "rr", tmp_path)
        rules = subprocess.run(["ip", "netns", "exec", host, "iptables", "-t", "nat", "-L",
                                "DOCKER", "-v", "-x", "-n"], capture_output=True, text=True).stdout
    dnat = [line for line in rules.splitlines() if "DNAT" in line and f"dpt:{port}" in line]
    assert dnat and int(dnat[0].split()[0]) > 0, rules


def test_macvlan_and_host_modes_place_nodes_as_claimed() -> None:
    with open_lab(LabSpec("docker-macvlan", hosts=2, nodes=2, services=[PORT])) as lab:
        node = lab.nodes[0]
        assert _kind(node.netns, node.ifname) == "macvlan"
        assert node.ip.startswith(lab.topo.addresses.net + f".{1 + node.host}.")
    with open_lab(LabSpec("docker-host", hosts=2, nodes=2, services=[PORT])) as lab:
        node = lab.nodes[0]
        assert node.netns == lab.names.host_ns(node.host)
        assert node.ip == lab.topo.addresses.host_underlay(node.host)


def test_docker_resource_flags_bind_the_node_processes() -> None:
    with open_lab(LabSpec("docker-bridge", hosts=1, nodes=2, resources=Resources(cpus=0.25))) as lab:
        node = lab.nodes[0]
        assert node.cgroup is not None
        cpu = next(d for d in node.cgroup.dirs if (d / "cpu.cfs_quota_us").exists())
        assert (cpu / "cpu.cfs_quota_us").read_text().strip() == "25000"
        busy = node.start_busy(bound_s=30)
        assert str(busy.pid) in (cpu / "cgroup.procs").read_text().split()
        lab.stop(busy)


HOLDER = """
import sys, time
from vnetbench.backends.lab import open_lab
from vnetbench.lab.spec import LabSpec
with open_lab(LabSpec(sys.argv[1], hosts=2, nodes=2)) as lab:
    lab.nodes[0].spawn(["sleep", "300"])
    print(lab.run_id, flush=True)
    time.sleep(300)
"""


def _start_holder(layer: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, layer], stdout=subprocess.PIPE,
                            text=True, preexec_fn=signals_at_default)
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    assert len(run_id) == 4, run_id
    assert _engine_processes(run_id), "each host runs its own engine"
    return proc, run_id


def test_sigterm_tears_a_docker_lab_down() -> None:
    proc, run_id = _start_holder("docker-bridge")
    proc.send_signal(signal.SIGTERM)
    proc.wait(90)
    assert proc.stdout is not None
    proc.stdout.close()
    _assert_gone(run_id)


def test_sigkill_then_clean_removes_containers_and_engines() -> None:
    proc, run_id = _start_holder("docker-overlay")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert proc.stdout is not None
    proc.stdout.close()
    assert _engine_processes(run_id), "SIGKILL leaves the engines running"
    out = subprocess.run([sys.executable, "-m", "vnetbench", "clean"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"vnb{run_id}" in out.stdout
    _assert_gone(run_id)


def test_a_paired_run_keeps_each_docker_lab_beside_two_native_labs(tmp_path: Path) -> None:
    """``vnetbench run`` with a namespace layer and two Docker layers: three sessions (the
    namespace layers together, each Docker layer beside its own two native labs), every
    workload run whole in rounds, each layer paired with the native labs of its own session,
    every session's A/A pair recorded; nothing left in the kernel."""
    scenario = tmp_path / "docker-sessions.yaml"
    scenario.write_text(json.dumps({
        "name": "docker-sessions", "hosts": 2, "nodes": 2,
        "layers": ["host", "bridge", "docker-nat", "docker-bridge"],
        "workloads": [{"rr": {"duration": "500ms"}}], "repeat": 2, "seed": 5}))
    before = _root_snapshot()
    out = tmp_path / "out"
    got = subprocess.run([sys.executable, "-m", "vnetbench", "run", str(scenario), "--out",
                          str(out)], capture_output=True, text=True, timeout=600, check=False)
    assert got.returncode == 0, got.stderr[-3000:]
    assert "3 sessions: host+bridge, host+docker-nat, host+docker-bridge" in got.stderr
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    tps = [s for s in samples if s["metric"] == "tps"]
    assert {s["labels"]["design"] for s in tps} == {"rounds"}
    pairs = {layer: {s["labels"]["pair"] for s in tps if s["labels"]["layer"] == layer}
             for layer in ("bridge", "docker-nat", "docker-bridge")}
    host = {s["labels"]["pair"] for s in tps if s["labels"]["layer"] == "host"}
    for layer, mine in pairs.items():
        assert len(mine) == 2 and mine <= host, layer  # its own session's rounds, both hosts
    assert pairs["docker-nat"].isdisjoint(pairs["docker-bridge"])  # sessions apart
    aa = {s["labels"]["pair"] for s in tps if s["labels"].get("aa") == "b"}
    assert aa == host  # every session's rounds hold the A/A pair
    assert _root_snapshot() == before
