"""Docker's network modes as layers of the lab (``docker-host``, ``docker-bridge``, ...).

Each mode is a ``Layer`` whose plan builds the same underlay as every lab layer (switch,
emulated hosts, shaping) plus one Docker engine per host; the containers and Docker networks
come after the engines are up (``steps`` lists them, ``runtime`` runs them). Every mode
names its lab twin, the namespace layer it is measured beside:

    mode               what a node's packet crosses                               twin
    docker-host        nothing: the container shares its host's namespace        host
    docker-bridge      docker0 (default bridge, Docker's iptables rules); hosts'
                       bridge subnets routed over the underlay                     bridge
    docker-userbridge  a user-defined bridge network (its own bridge and chains)  bridge
    docker-nat         published port at the host address: iptables DNAT
                       (``--userland-proxy=false``), MASQUERADE out               nat
    docker-proxy       published port served by docker-proxy: every connection is
                       relayed in userspace (engine with ``--iptables=false``, so no
                       DNAT rule short-cuts the proxy)                             nat
    docker-macvlan     macvlan network on the host's underlay interface            macvlan
    docker-overlay     swarm overlay network (VXLAN) across the hosts' engines     vxlan

Routed modes (docker-bridge, docker-userbridge) reach containers of other hosts at their own
addresses, as on Docker hosts whose container subnets are routed: the plan routes each
host's bridge subnet via that host, masquerading is off for the bridge (``--ip-masq=false``,
``enable_ip_masquerade=false``; with it, a peer would see the other host's address and MPI,
Hadoop and the like refuse the connection), and a rule in Docker's DOCKER-USER chain admits
the lab's own traffic (Docker drops forwarded traffic it did not publish). docker-proxy
routes the subnets too, so the relayed connection's replies find the client container.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field

from vnetbench.backends.docker.engine import EngineSettings, engine_actions, find_dockerd
from vnetbench.errors import LabError
from vnetbench.host.node import Node
from vnetbench.lab.plan import PlanBuilder
from vnetbench.lab.topology import Topology
from vnetbench.layers.base import (
    Layer,
    LayerOptions,
    NodePlacement,
    PlanContext,
    ServiceMap,
    plan_underlay,
    route_host_subnets_via_underlay,
)

Network = Literal["host", "bridge", "userbridge", "macvlan", "overlay"]


@dataclass(frozen=True)
class DockerMode:
    """What one Docker network mode asks of the engines and of ``docker run``."""

    network: Network
    engine: EngineSettings
    twin: str
    publish: bool = False
    """Services are reached at the host's address through ports published at ``docker run``."""
    routed: bool = False
    """Host bridge subnets are routed between hosts over the underlay."""


class DockerOptions(LayerOptions):
    """Options of every Docker mode."""

    first_port: int = Field(30000, ge=1024, le=60000)
    """First host port of published services (docker-nat, docker-proxy)."""

    def first_published_port(self) -> int | None:
        return self.first_port


def host_port(topo: Topology, opts: DockerOptions, services: Sequence[int], j: int,
              port: int) -> int:
    """Host port publishing service ``port`` of node ``j`` (see the module docstring)."""
    return opts.first_port + topo.slot_of(j) * len(services) + list(services).index(port)


class PublishedAtRun(ServiceMap):
    """Ports Docker published when the containers started (``docker run -p``): a client
    connects to the server's host address at the port ``host_port`` gave the service."""

    def __init__(self, topo: Topology, opts: DockerOptions, services: tuple[int, ...],
                 mode_name: str) -> None:
        self.topo, self.opts, self.services, self.mode_name = topo, opts, services, mode_name

    def endpoint(self, server: Node, port: int, proto: str = "tcp") -> tuple[str, int]:
        if port not in self.services:
            raise LabError(f"port {port} of node {server.name} is not published by "
                           f"{self.mode_name} (published: {list(self.services)}): Docker "
                           "publishes ports when a container starts, so a workload's port "
                           "must be known to the lab (Lab.services)")
        return (self.topo.addresses.host_underlay(server.host),
                host_port(self.topo, self.opts, self.services, server.index, port))


class DockerLayer(Layer[DockerOptions]):
    """A Docker network mode: the underlay, one engine per host, containers as nodes."""

    backend: ClassVar[str] = "docker"
    mode: ClassVar[DockerMode]
    options = DockerOptions
    requires: ClassVar[tuple[str, ...]] = ("veth", "bridge")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "mode" in cls.__dict__:
            cls.twin = cls.mode.twin

    def check_supported(self) -> None:
        find_dockerd()  # MissingToolError when no engine is installed
        super().check_supported()

    def resolve_tools(self, topo: Topology) -> dict[str, str]:
        return {**super().resolve_tools(topo), "dockerd": find_dockerd()}

    def service_map(self, topo: Topology, opts: DockerOptions,
                    services: tuple[int, ...]) -> ServiceMap:
        if not self.publishes_ports:
            return ServiceMap()
        return PublishedAtRun(topo, opts, services, self.name)

    def resolve_machine_tools(self, topo: Topology) -> dict[str, str]:
        """On real machines the engine is the machine's own: its ``docker`` client is what
        the lab runs there (no dockerd is needed on this host)."""
        return {**super().resolve_tools(topo), "docker": "docker"}

    def plan(
        self, topo: Topology, opts: DockerOptions, b: PlanBuilder, ctx: PlanContext
    ) -> list[NodePlacement]:
        on_machines = ctx.host_kind == "machine"
        # forwarding stays off until Docker turns it on itself, as on a fresh Docker host; a
        # real machine's engine has turned it on already (set anyway where routed, and
        # restored at teardown)
        plan_underlay(topo, b, forwarding=on_machines and self.mode.routed, ctx=ctx)
        if self.mode.routed:
            route_host_subnets_via_underlay(topo, b)
        if on_machines:  # the machines' own engines (``docker: existing``) are used
            return [self.placement(topo, j) for j in range(topo.nodes)]
        for i in range(topo.hosts):
            config, daemon = engine_actions(topo, i, self.mode.engine, ctx.tool("dockerd"))
            b.files.append(config)
            b.daemons.append(daemon)
        return [self.placement(topo, j) for j in range(topo.nodes)]

    def placement(self, topo: Topology, j: int) -> NodePlacement:
        """Where node ``j`` will be once its container runs (the runtime checks the address)."""
        n, a = topo.names, topo.addresses
        i, slot = topo.host_of(j), topo.slot_of(j)
        network = self.mode.network
        if network == "host":
            return NodePlacement(j, i, n.host_ns(i), a.host_underlay(i), n.underlay(i))
        ip = {"bridge": a.subnet_node(i, slot), "userbridge": a.subnet_node(i, slot),
              "macvlan": a.direct_node(i, slot), "overlay": a.overlay_node(j)}[network]
        return NodePlacement(j, i, n.node_ns(j), ip, "eth0")


class DockerHostLayer(DockerLayer):
    name = "docker-host"
    summary = "Docker --network host: containers in the host's namespace"
    mode = DockerMode("host", EngineSettings(default_bridge=False), twin="host")
    shares_host_netns = True


class DockerBridgeLayer(DockerLayer):
    name = "docker-bridge"
    summary = "Docker's default bridge (docker0), subnets routed between hosts"
    mode = DockerMode("bridge", EngineSettings(default_bridge=True, ip_masq=False), twin="bridge",
                      routed=True)


class DockerUserbridgeLayer(DockerLayer):
    name = "docker-userbridge"
    summary = "a user-defined Docker bridge network, subnets routed between hosts"
    mode = DockerMode("userbridge", EngineSettings(default_bridge=False), twin="bridge",
                      routed=True)


class DockerNatLayer(DockerLayer):
    name = "docker-nat"
    summary = "published port (docker run -p) via iptables DNAT, no userland proxy"
    mode = DockerMode("bridge", EngineSettings(default_bridge=True), twin="nat", publish=True)
    publishes_ports = True


class DockerProxyLayer(DockerLayer):
    name = "docker-proxy"
    summary = "published port relayed by docker-proxy (the userland proxy)"
    mode = DockerMode("bridge", EngineSettings(default_bridge=True, iptables=False,
                                               userland_proxy=True),
                      twin="nat", publish=True, routed=True)
    publishes_ports = True


class DockerMacvlanLayer(DockerLayer):
    name = "docker-macvlan"
    summary = "Docker macvlan network (bridge mode) on the host's underlay interface"
    mode = DockerMode("macvlan", EngineSettings(default_bridge=False), twin="macvlan")
    host_reaches_own_nodes = False
    requires = ("veth", "macvlan")


class DockerOverlayLayer(DockerLayer):
    name = "docker-overlay"
    summary = "Docker swarm overlay network (VXLAN) across the hosts' engines"
    mode = DockerMode("overlay", EngineSettings(default_bridge=False), twin="vxlan")
    between_hosts = "the overlay's VXLAN encapsulation"
    requires = ("veth", "bridge", "vxlan")


DOCKER_LAYERS: tuple[type[DockerLayer], ...] = (
    DockerHostLayer, DockerBridgeLayer, DockerUserbridgeLayer, DockerNatLayer, DockerProxyLayer,
    DockerMacvlanLayer, DockerOverlayLayer,
)
