"""The docker backend's pure parts: engine configuration, the docker steps of each mode,
published ports, the node image's contents, and the Docker-vs-twin report table."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from vnetbench.backends.catalog import LAYERS, get_layer
from vnetbench.backends.docker.engine import daemon_config, engine_actions, pool_base
from vnetbench.backends.docker.image import shared_libraries, write_rootfs
from vnetbench.backends.docker.modes import DOCKER_LAYERS, DockerLayer, DockerOptions, host_port
from vnetbench.backends.docker.steps import TOKEN, build_phases, run_args
from vnetbench.lab.plan import PlanBuilder
from vnetbench.lab.topology import Addresses, Names, Resources, Topology
from vnetbench.layers.base import PlanContext
from vnetbench.report.tables import headline_table
from vnetbench.report.twins import compare_twins, twin_pairs, twin_summary_lines
from vnetbench.results.model import Sample

TOPO = Topology(hosts=2, nodes=4, names=Names("abcd"), addresses=Addresses("10.210"))
OPTS = DockerOptions()
NO_LIMITS = Resources()


def layer(name: str) -> DockerLayer:
    lay = get_layer(name)
    assert isinstance(lay, DockerLayer)
    return lay


def phases(name: str, services: tuple[int, ...] = (7000,),
           resources: Resources = NO_LIMITS) -> dict[str, list[tuple[int, tuple[str, ...]]]]:
    out = build_phases(TOPO, layer(name).mode, OPTS, services, resources, Path("/x/rootfs.tar"))
    return {p.title: [(s.host, s.args) for s in p.steps] for p in out}


def test_every_mode_is_registered_with_a_lab_twin() -> None:
    for cls in DOCKER_LAYERS:
        assert cls.name.startswith("docker-") and LAYERS[cls.name] is cls
        assert cls.mode.twin in LAYERS and LAYERS[cls.mode.twin].backend == "netns"


def test_engine_config_keeps_everything_inside_the_run() -> None:
    cfg = daemon_config(TOPO, 1, layer("docker-bridge").mode.engine)
    assert cfg["data-root"] == "/var/tmp/vnetbench/abcd/docker/h1/data"
    assert cfg["hosts"] == ["unix:///var/tmp/vnetbench/abcd/docker/h1/docker.sock"]
    assert cfg["exec-root"].startswith("/run/")  # the engine's private tmpfs
    assert cfg["cgroup-parent"] == "/vnbabcd/h1"
    assert cfg["bip"] == "10.210.65.1/24" and "bridge" not in cfg
    assert cfg["ip-masq"] is False  # routed between hosts: peers see each other's address
    assert cfg["default-address-pools"] == [{"base": pool_base(TOPO), "size": 24}]
    # Docker's own pool sits between the host subnets and the overlay of the address plan
    assert pool_base(TOPO) == "10.210.124.0/23"
    overlay = daemon_config(TOPO, 0, layer("docker-overlay").mode.engine)
    assert overlay["bridge"] == "none" and "bip" not in overlay
    proxy = daemon_config(TOPO, 0, layer("docker-proxy").mode.engine)
    assert proxy["userland-proxy"] is True and proxy["iptables"] is False
    nat = daemon_config(TOPO, 0, layer("docker-nat").mode.engine)
    assert nat["userland-proxy"] is False and nat["iptables"] is True


def test_engine_runs_in_its_host_namespace_with_its_own_config_file() -> None:
    config, daemon = engine_actions(TOPO, 0, layer("docker-nat").mode.engine, "/usr/sbin/dockerd")
    assert daemon.netns == "vnbabcd-h0"
    assert daemon.argv[:4] == ("unshare", "--mount", "--propagation", "private")
    assert daemon.argv[-3:] == ("/usr/sbin/dockerd", "--config-file", config.path)
    assert daemon.ready == "path:/var/tmp/vnetbench/abcd/docker/h0/docker.sock"


@pytest.mark.parametrize("name", [cls.name for cls in DOCKER_LAYERS])
def test_plan_is_the_underlay_plus_one_engine_per_host(name: str) -> None:
    b = PlanBuilder()
    placements = layer(name).plan(TOPO, OPTS, b, PlanContext(run_dir=Path("/run/x")))
    plan = b.build()
    assert [d.role for d in b.daemons] == ["dockerd h0", "dockerd h1"]
    assert plan.namespaces == ("vnbabcd-sw", "vnbabcd-h0", "vnbabcd-h1")  # nodes come later
    assert [p.host for p in placements] == [0, 1, 0, 1]
    routed = "route add 10.210.65.0/24 via 10.210.0.2" in plan.render()
    assert routed == layer(name).mode.routed


def test_every_object_is_named_and_labelled_with_the_run() -> None:
    for cls in DOCKER_LAYERS:
        for title, steps in phases(cls.name).items():
            for _, args in steps:
                if args[0] == "run":
                    assert "vnetbench.run=abcd" in args and args[args.index("--name") + 1] \
                        .startswith("vnbabcd-n")
                if args[:2] == ("network", "create"):
                    assert args[-1].startswith("vnbabcd-") and "vnetbench.run=abcd" in args
            assert title


def test_userbridge_names_its_device_and_fixes_node_addresses() -> None:
    p = phases("docker-userbridge")
    nets = p["networks"]
    assert [h for h, _ in nets] == [0, 1]
    assert "com.docker.network.bridge.name=vnbabcdb1" in nets[1][1]
    assert "com.docker.network.bridge.enable_ip_masquerade=false" in nets[1][1]
    runs = dict((args[args.index("--name") + 1], args) for _, args in p["containers"])
    assert runs["vnbabcd-n2"][runs["vnbabcd-n2"].index("--ip") + 1] == "10.210.64.3"


def test_overlay_is_a_swarm_with_an_attachable_network() -> None:
    p = phases("docker-overlay")
    assert list(p) == ["image", "swarm init", "swarm token", "swarm join", "networks",
                       "containers"]
    assert p["swarm join"] == [(1, ("swarm", "join", "--token", TOKEN, "--advertise-addr",
                                    "10.210.0.2", "--listen-addr", "10.210.0.2:2377",
                                    "10.210.0.1:2377"))]
    (host, create), = p["networks"]
    assert host == 0 and "--attachable" in create and "10.210.128.0/17" in create
    # swarm's own allocations (load balancers) stay out of the nodes' addresses
    assert create[create.index("--ip-range") + 1] == "10.210.255.0/24"
    ips = [args[args.index("--ip") + 1] for _, args in p["containers"]]
    assert ips == ["10.210.128.2", "10.210.128.3", "10.210.128.4", "10.210.128.5"]
    single = build_phases(Topology(1, 2, Names("abcd"), Addresses("10.210")),
                          layer("docker-overlay").mode, OPTS, (), Resources(), Path("/r"))
    assert "swarm join" not in [ph.title for ph in single]


def test_macvlan_network_per_host_on_its_underlay() -> None:
    nets = phases("docker-macvlan")["networks"]
    _, args = nets[1]
    assert "parent=vnbabcdu1" in args and args[args.index("--ip-range") + 1] == "10.210.2.0/24"


def test_published_ports_are_distinct_per_host_and_same_for_tcp_and_udp() -> None:
    services = (7000, 7100)
    ports = {(TOPO.host_of(j), host_port(TOPO, OPTS, services, j, p))
             for j in range(TOPO.nodes) for p in services}
    assert len(ports) == TOPO.nodes * len(services)
    args = run_args(TOPO, layer("docker-nat").mode, OPTS, services, Resources(), 2)
    assert args[args.index("30002:7000/tcp") - 1:][:2] == ("--publish", "30002:7000/tcp")
    assert "30002:7000/udp" in args and "30003:7100/tcp" in args
    assert "--publish" not in run_args(TOPO, layer("docker-bridge").mode, OPTS, services,
                                       Resources(), 2)


def test_resources_map_to_dockers_own_flags() -> None:
    args = run_args(TOPO, layer("docker-bridge").mode, OPTS, (), Resources(cpus=0.5,
                    memory=256 * 2**20, cpuset="1"), 0)
    assert args[args.index("--cpus") + 1] == "0.5"
    assert args[args.index("--memory") + 1] == str(256 * 2**20)
    assert args[args.index("--cpuset-cpus") + 1] == "1"
    host = run_args(TOPO, layer("docker-host").mode, OPTS, (), Resources(), 0)
    assert "--hostname" not in host and host[host.index("--network") + 1] == "host"


LDD = """\tlinux-vdso.so.1 (0x00007ffd2b5f2000)
\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f5dd9551000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f5dd936f000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f5dd96c4000)
"""


def test_shared_libraries_from_ldd_output() -> None:
    assert shared_libraries(LDD) == ["/lib/x86_64-linux-gnu/libgcc_s.so.1",
                                     "/lib/x86_64-linux-gnu/libc.so.6",
                                     "/lib64/ld-linux-x86-64.so.2"]


def test_rootfs_holds_the_files_and_what_docker_mounts_over(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    probe.write_bytes(b"\x7fELF-not-really")
    link = tmp_path / "link"
    link.symlink_to(probe)
    target = tmp_path / "rootfs.tar"
    write_rootfs(target, {"usr/local/bin/vnetbench-probe": link})
    with tarfile.open(target) as tar:
        names = set(tar.getnames())
        member = tar.getmember("usr/local/bin/vnetbench-probe")
        assert member.isfile() and member.uid == 0  # dereferenced, owned by root
        assert tar.extractfile(member).read() == b"\x7fELF-not-really"  # type: ignore[union-attr]
    assert {"proc", "sys", "dev", "etc/hosts", "etc/resolv.conf", "usr/local"} <= names


def _samples(layer_name: str, rtt: list[float]) -> list[Sample]:
    return [Sample("rtt_p50_us", v, "us", {"layer": layer_name, "workload": "probe-rr",
                                           "nodes": "2", "hosts": "2", "repetition": str(k)})
            for k, v in enumerate(rtt)]


def test_twin_table_pairs_each_mode_with_its_lab_layer() -> None:
    samples = (_samples("host", [20, 21, 20, 21]) + _samples("nat", [30, 31, 30, 31])
               + _samples("docker-nat", [30, 30, 31, 31])
               + _samples("docker-proxy", [90, 95, 92, 92])
               + _samples("docker-overlay", [40, 41, 40, 41]))  # no vxlan: no pair
    assert twin_pairs(["host", "nat", "docker-nat", "docker-proxy", "docker-overlay"]) == [
        ("docker-nat", "nat"), ("docker-proxy", "nat")]
    table = headline_table(samples)
    assert table is not None
    cmp = compare_twins(samples, table)
    assert cmp is not None
    col = table.columns[0]
    assert cmp.ratios[("docker-proxy", col)].verdict() == "worse"
    assert cmp.ratios[("docker-proxy", col)].ratio.value == pytest.approx(92 / 30.5)
    assert cmp.ratios[("docker-nat", col)].verdict() == "same"
    lines = twin_summary_lines(cmp)
    assert any(line.startswith("  docker-proxy / nat") and "x3.02*" in line for line in lines)
    assert any(line.startswith("  docker-nat / nat") and "x1.00 " in line + " "
               for line in lines)
    assert compare_twins(_samples("host", [1, 2]) + _samples("bridge", [3, 4]),
                         headline_table(_samples("host", [1, 2]) + _samples("bridge", [3, 4]))
                         or table) is None
