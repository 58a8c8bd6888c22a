"""The docker commands that turn running engines into a lab (pure, printable, testable).

After the engines are up, a Docker lab is built in phases; the steps of one phase on
different hosts run in parallel, those on one host in order:

    image       ``docker import`` of the node root filesystem on every engine
    swarm       (docker-overlay) ``swarm init`` on host 0, its worker token, ``swarm join``
    networks    the mode's network: a user bridge or macvlan network per engine, or one
                attachable overlay network made on the swarm manager
    containers  ``docker run`` of every node's container, in node order on each host

Names carry the run's prefix (``vnb<id>-n<j>`` containers, ``vnb<id>-ub``/``-mv``/``-ov``
networks, image ``vnb<id>-node``, the user bridge's device ``vnb<id>b<i>``) and every object
the label ``vnetbench.run=<id>``, so teardown finds them all. Published ports are fixed at
``docker run`` (Docker cannot add them later): every service port the scenario's workloads
use is published on every container of docker-nat and docker-proxy, TCP and UDP on the same
host port, ``first_port + slot * len(services) + k`` for the k-th service of the node in
``slot`` on its host.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vnetbench.backends.docker.engine import swarm_pool
from vnetbench.backends.docker.modes import DockerMode, DockerOptions, host_port
from vnetbench.lab.topology import Resources, Topology

TOKEN = "<swarm-worker-token>"
"""Placeholder in ``swarm join`` replaced by what the token step captured."""
SWARM_PORT = 2377
NODE_COMMAND = '["/bin/sleep", "infinity"]'


@dataclass(frozen=True)
class DockerStep:
    """``docker <args>`` against host ``host``'s engine."""

    host: int
    args: tuple[str, ...]
    node: int | None = None
    """The step starts node ``node``'s container (its output is the container id)."""
    capture: str | None = None
    """Keep the step's output under this name (the swarm token)."""

    def describe(self) -> str:
        return f"h{self.host}: docker {' '.join(self.args)}"


@dataclass(frozen=True)
class Phase:
    title: str
    steps: tuple[DockerStep, ...]


def run_label(topo: Topology) -> str:
    return f"vnetbench.run={topo.names.short_id}"


def image_ref(topo: Topology) -> str:
    return f"{topo.names.prefix}-node:latest"


def container_name(topo: Topology, j: int) -> str:
    return topo.names.node_ns(j)


def network_name(topo: Topology, mode: DockerMode) -> str:
    """The Docker network the mode's containers join (``bridge``/``host`` are Docker's own)."""
    p = topo.names.prefix
    return {"host": "host", "bridge": "bridge", "userbridge": f"{p}-ub",
            "macvlan": f"{p}-mv", "overlay": f"{p}-ov"}[mode.network]


def own_networks(topo: Topology, mode: DockerMode) -> list[str]:
    """Networks this lab creates (and teardown removes)."""
    name = network_name(topo, mode)
    return [] if name in ("host", "bridge") else [name]


def overlay_ip_range(topo: Topology) -> str:
    """Where swarm may allocate addresses itself (load-balancer endpoints): the top of the
    overlay subnet, away from the nodes' fixed addresses."""
    return f"{topo.addresses.net}.255.0/24"


def build_phases(topo: Topology, mode: DockerMode, opts: DockerOptions,
                 services: Sequence[int], resources: Resources, rootfs: Path) -> list[Phase]:
    """Every docker command that builds the lab once the engines answer, phase by phase."""
    label = run_label(topo)
    hosts = range(topo.hosts)
    phases = [Phase("image", tuple(
        DockerStep(i, ("import", "--change", f"CMD {NODE_COMMAND}", "--change", f"LABEL {label}",
                       str(rootfs), image_ref(topo))) for i in hosts))]
    phases += _network_phases(topo, mode, label)
    phases.append(Phase("containers", tuple(
        DockerStep(topo.host_of(j), run_args(topo, mode, opts, services, resources, j), node=j)
        for j in range(topo.nodes))))
    return phases


def _network_phases(topo: Topology, mode: DockerMode, label: str) -> list[Phase]:
    a, n = topo.addresses, topo.names
    name = network_name(topo, mode)
    if mode.network == "userbridge":
        return [Phase("networks", tuple(
            DockerStep(i, ("network", "create", "--driver", "bridge", "--subnet", a.host_subnet(i),
                           "--gateway", a.host_gateway(i), "--opt",
                           f"com.docker.network.bridge.name={n.host_bridge(i)}", "--opt",
                           "com.docker.network.bridge.enable_ip_masquerade=false", "--label",
                           label, name)) for i in range(topo.hosts)))]
    if mode.network == "macvlan":
        return [Phase("networks", tuple(
            DockerStep(i, ("network", "create", "--driver", "macvlan", "--subnet",
                           f"{a.net}.0.0/{a.underlay_prefix}", "--ip-range", a.direct_range(i),
                           "--opt", f"parent={n.underlay(i)}", "--opt", "macvlan_mode=bridge",
                           "--label", label, name)) for i in range(topo.hosts)))]
    if mode.network == "overlay":
        manager = a.host_underlay(0)
        phases = [
            Phase("swarm init", (DockerStep(0, (
                "swarm", "init", "--advertise-addr", manager,
                "--listen-addr", f"{manager}:{SWARM_PORT}", "--default-addr-pool",
                swarm_pool(topo), "--default-addr-pool-mask-length", "24")),)),
        ]
        if topo.hosts > 1:
            phases.append(Phase("swarm token", (DockerStep(
                0, ("swarm", "join-token", "--quiet", "worker"), capture="token"),)))
            phases.append(Phase("swarm join", tuple(
                DockerStep(i, ("swarm", "join", "--token", TOKEN, "--advertise-addr",
                               a.host_underlay(i), "--listen-addr",
                               f"{a.host_underlay(i)}:{SWARM_PORT}", f"{manager}:{SWARM_PORT}"))
                for i in range(1, topo.hosts))))
        phases.append(Phase("networks", (DockerStep(0, (
            "network", "create", "--driver", "overlay", "--attachable", "--subnet",
            a.overlay_subnet, "--ip-range", overlay_ip_range(topo), "--label", label, name)),)))
        return phases
    return []


def run_args(topo: Topology, mode: DockerMode, opts: DockerOptions, services: Sequence[int],
             resources: Resources, j: int) -> tuple[str, ...]:
    """``docker run`` arguments of node ``j``'s container."""
    a = topo.addresses
    i, slot = topo.host_of(j), topo.slot_of(j)
    args = ["run", "--detach", "--name", container_name(topo, j), "--label", run_label(topo),
            "--log-driver", "none"]
    if mode.network == "host":
        args += ["--network", "host"]
    else:
        args += ["--hostname", f"n{j}"]
    if mode.network in ("userbridge", "macvlan", "overlay"):
        ip = {"userbridge": a.subnet_node(i, slot), "macvlan": a.direct_node(i, slot),
              "overlay": a.overlay_node(j)}[mode.network]
        args += ["--network", network_name(topo, mode), "--ip", ip]
    if mode.publish:
        for port in services:
            hp = host_port(topo, opts, services, j, port)
            args += ["--publish", f"{hp}:{port}/tcp", "--publish", f"{hp}:{port}/udp"]
    if resources.cpus is not None:
        args += ["--cpus", f"{resources.cpus:g}"]
    if resources.cpuset is not None:
        args += ["--cpuset-cpus", resources.cpuset]
    if resources.memory is not None:
        args += ["--memory", str(resources.memory)]
    args.append(image_ref(topo))
    return tuple(args)


def describe_phases(phases: Sequence[Phase]) -> list[str]:
    """Lines for ``vnetbench plan``."""
    lines: list[str] = []
    for phase in phases:
        lines.append(f"== docker {phase.title} ({len(phase.steps)} command(s))")
        lines += [f"    {step.describe()}" for step in phase.steps]
    return lines
