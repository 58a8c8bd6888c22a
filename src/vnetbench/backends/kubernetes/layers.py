"""The Kubernetes paths as layers of the lab (``k8s-pod``, ``k8s-hostnetwork``, ``k8s-service``).

Each names a cluster (``context`` of a ``kubeconfig``) and the Kubernetes nodes to use
(``nodes``): the lab's emulated host ``i`` is Kubernetes node ``nodes[i]``, so ``hosts: 1``
puts every vnetbench node on one Kubernetes node (same-node paths) and ``hosts: 2`` spreads
them round-robin (cross-node paths). Every vnetbench node is a pod pinned to its Kubernetes
node, in a namespace of the run's own (``vnb<id>``):

    layer             a node is                                 a client reaches a server at
    k8s-pod           a pod on the cluster's CNI, as it is        the pod's IP
    k8s-hostnetwork   a hostNetwork pod: the node's own stack     the node's IP (the baseline)
    k8s-service       a pod on the CNI, with a ClusterIP          the Service's ClusterIP,
                      Service selecting it                        through kube-proxy

A mixed placement (a hostNetwork client to a pod server) is a workload's ``client: host``
on ``k8s-pod`` or ``k8s-service``: the "host" is a hostNetwork pod on that Kubernetes node.
The plan touches nothing on this machine: the backend (``backends.kubernetes.backend``)
creates the pods through the cluster's API. Each layer's lab twin (the report sets a path
beside it when both ran): ``k8s-hostnetwork`` beside ``host``, ``k8s-service`` beside ``nat``
(a NATed hop to a pod), and ``k8s-pod`` beside the lab layer of the CNI's mode as the nodes
show it (``vxlan`` for a VXLAN overlay, ``routed`` for pod subnets routed between nodes,
``wireguard``), recorded in run.json as ``kubernetes.twin``.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator

from vnetbench.errors import LabError
from vnetbench.host.node import Node
from vnetbench.lab.plan import PlanBuilder
from vnetbench.lab.topology import Topology
from vnetbench.layers.base import Layer, LayerOptions, NodePlacement, PlanContext, ServiceMap
from vnetbench.units import Duration

NODE_NAME = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
"""A Kubernetes node name (a DNS subdomain)."""


class KubernetesOptions(LayerOptions):
    """Which cluster and which of its nodes a Kubernetes layer uses (the same for every
    Kubernetes layer of a scenario: give them once with a YAML anchor)."""

    nodes: tuple[str, ...] = Field(default=(), max_length=60)
    """Kubernetes node names; the lab's host ``i`` is ``nodes[i]`` (``hosts: 1``: all pods
    on the first, same-node; ``hosts: 2``: round-robin over the first two, cross-node)."""
    context: str | None = None
    """The kubeconfig context of the cluster (default: the kubeconfig's current context)."""
    kubeconfig: str | None = None
    """The kubeconfig file (``~`` expands; default: ``$KUBECONFIG``, else ``~/.kube/config``)."""
    image: str | None = None
    """The pods' image (default: vnetbench's own, built here with the probe and busybox;
    it must already be on every node: ``python3 -m vnetbench.backends.kubernetes.image``
    writes it for ``ctr -n k8s.io images import``). An image of yours needs
    ``/usr/local/bin/vnetbench-probe`` and a shell with ``cat``, ``sleep`` and ``kill``."""
    evidence: bool = True
    """Run a short-lived privileged hostNetwork/hostPID pod per Kubernetes node for the
    node's counters (CPU, softirqs, devices) and the CNI's facts; off where policy forbids
    privileged pods (the pods' own TCP counters are still read)."""
    ready_timeout: Duration = Field(default=120.0, gt=0, le=3600)
    """How long the pods may take to run (image present, CNI set up)."""

    @field_validator("nodes")
    @classmethod
    def _node_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        import re
        for name in value:
            if not re.fullmatch(NODE_NAME, name):
                raise ValueError(f"{name!r} is not a Kubernetes node name")
        if len(set(value)) != len(value):
            raise ValueError("a node is listed twice")
        return value


class PodServiceMap(ServiceMap):
    """``k8s-service``: a client reaches a server pod at its Service's ClusterIP (set on the
    node when the Service was made)."""

    def endpoint(self, server: Node, port: int, proto: str = "tcp") -> tuple[str, int]:
        cluster_ip = getattr(server, "service_ip", None)
        if not cluster_ip:
            raise LabError(f"node {server.name} has no Service (k8s-service makes one per pod)")
        return cluster_ip, port


class KubernetesLayer(Layer[KubernetesOptions]):
    """A path between pods of a Kubernetes cluster (see the module docstring)."""

    backend: ClassVar[str] = "kubernetes"
    options = KubernetesOptions
    host_network: ClassVar[bool] = False
    """The pods use their node's own network stack (``hostNetwork: true``)."""
    service: ClassVar[bool] = False
    """Each pod gets a ClusterIP Service; clients reach servers through it."""

    def twin_for(self, mode: str) -> str | None:
        """The lab layer this path is measured beside, given the CNI's mode (``detect``)."""
        return self.twin

    def check_supported(self) -> None:
        return None  # nothing of this machine's kernel is used; the cluster is checked later

    def resolve_tools(self, topo: Topology) -> dict[str, str]:
        return {}  # kubectl is found by the backend (``kubectl.find_kubectl``)

    def plan(self, topo: Topology, opts: KubernetesOptions, b: PlanBuilder,
             ctx: PlanContext) -> list[NodePlacement]:
        """Nothing on this machine; node ``j`` will be pod ``vnb<id>-n<j>`` on Kubernetes
        node ``nodes[host_of(j)]`` (its address is known once the pod runs)."""
        if not opts.nodes:
            raise LabError(f"layer {self.name} needs the Kubernetes nodes to use: give "
                           f"{self.name}: {{nodes: [NODE, ...]}} in the scenario's layers")
        if topo.hosts > len(opts.nodes):
            raise LabError(f"{topo.hosts} hosts asked for, but layer {self.name} names "
                           f"{len(opts.nodes)} Kubernetes node(s) ({', '.join(opts.nodes)}): "
                           "list at least as many nodes as hosts")
        return [NodePlacement(j, topo.host_of(j), f"{topo.names.prefix}-n{j}", "(pod IP)", "eth0")
                for j in range(topo.nodes)]

    def service_map(self, topo: Topology, opts: KubernetesOptions,
                    services: tuple[int, ...]) -> ServiceMap:
        return PodServiceMap() if self.service else ServiceMap()


POD_TWINS = {"vxlan": "vxlan", "routed": "routed", "wireguard": "wireguard"}
"""The lab layer of each CNI mode (ipip and geneve have none here)."""


class PodLayer(KubernetesLayer):
    name = "k8s-pod"
    summary = "pods on the Kubernetes cluster's CNI, as it is"

    def twin_for(self, mode: str) -> str | None:
        return POD_TWINS.get(mode)


class HostNetworkLayer(KubernetesLayer):
    name = "k8s-hostnetwork"
    summary = "hostNetwork pods: the Kubernetes nodes' own stack (the cluster's baseline)"
    host_network = True
    shares_host_netns = True
    twin = "host"


class ServiceLayer(KubernetesLayer):
    name = "k8s-service"
    summary = "pod to a ClusterIP Service, through the cluster's kube-proxy"
    service = True
    twin = "nat"


K8S_LAYERS: tuple[type[KubernetesLayer], ...] = (PodLayer, HostNetworkLayer, ServiceLayer)
