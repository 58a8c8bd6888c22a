"""Checks of a cluster before a Kubernetes lab creates anything, each failing in one line
(UnsupportedError) that says what to fix:

- the cluster answers (``kubectl version``) with the kubeconfig and context given;
- the kubeconfig's user may do what a lab does (``PERMISSIONS``, asked as
  SelfSubjectAccessReviews, which create nothing): the line lists what is missing, and
  docs/kubernetes.md has a ClusterRole granting exactly ``PERMISSIONS``;
- every node named exists and is Ready;
- vnetbench's own image is on every node (``status.images``; no registry has it): the line
  says how to load it. A named image is pulled by the nodes as the pods start; a node that
  cannot pull it fails the lab then, with the node's own message, before any workload runs.

Answers that do not change during a run (the server version, the permissions) are asked once
per process and cluster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from vnetbench.backends.kubernetes.kubectl import Kubectl
from vnetbench.errors import LabError, UnsupportedError


@dataclass(frozen=True)
class Permission:
    verb: str
    resource: str
    subresource: str = ""
    group: str = ""
    namespaced: bool = True
    service_only: bool = False
    """Needed by ``k8s-service`` only."""
    launcher_only: bool = False
    """Needed by a lab whose workload launches programs across its pods (MPI) only: it
    makes the launcher's service account and grants it what it holds itself."""

    def shown(self) -> str:
        what = self.resource + (f"/{self.subresource}" if self.subresource else "")
        if self.group:
            what += f".{self.group}"
        return f"{self.verb} {what}"

    def review(self, namespace: str) -> dict[str, Any]:
        attrs: dict[str, str] = {"verb": self.verb, "resource": self.resource}
        if self.subresource:
            attrs["subresource"] = self.subresource
        if self.group:
            attrs["group"] = self.group
        if self.namespaced:
            attrs["namespace"] = namespace
        return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attrs}}


PERMISSIONS: tuple[Permission, ...] = (
    Permission("get", "nodes", namespaced=False),
    Permission("list", "nodes", namespaced=False),
    Permission("create", "namespaces", namespaced=False),
    Permission("delete", "namespaces", namespaced=False),
    Permission("list", "namespaces", namespaced=False),
    Permission("get", "namespaces", namespaced=False),
    Permission("create", "pods"),
    Permission("get", "pods"),
    Permission("list", "pods"),
    Permission("create", "pods", "exec"),
    Permission("list", "events"),
    Permission("create", "services", service_only=True),
    Permission("create", "serviceaccounts", launcher_only=True),
    Permission("create", "roles", group="rbac.authorization.k8s.io", launcher_only=True),
    Permission("create", "rolebindings", group="rbac.authorization.k8s.io", launcher_only=True),
    Permission("get", "pods", "exec", launcher_only=True),
)
"""What a Kubernetes lab does with its kubeconfig's user (docs/kubernetes.md lists it as a
ClusterRole): namespaced ones in the run's own namespace, which does not exist beforehand,
so they are granted cluster-wide."""
PLACEHOLDER_NAMESPACE = "vnb0000"
"""The namespace permissions are asked for before a run has its id (any ``vnb`` name)."""


@dataclass(frozen=True)
class ClusterFacts:
    """What the checks learnt."""

    server_version: str
    client_version: str
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Node name -> a summary (kubelet and runtime versions, kernel, addresses, podCIDR)."""


@lru_cache(maxsize=16)
def _versions(kubectl: Kubectl) -> tuple[str, str]:
    try:
        got = kubectl.run(["version", "-o", "json"], timeout=40.0)
    except LabError as exc:
        raise UnsupportedError(f"cannot reach the Kubernetes cluster of {kubectl.cluster}: "
                               f"{str(exc).split(': ', 1)[-1]}; check kubeconfig and context in "
                               "the layer's options") from None
    data = json.loads(got.stdout)
    return (data.get("serverVersion", {}).get("gitVersion", "?"),
            data.get("clientVersion", {}).get("gitVersion", "?"))


@lru_cache(maxsize=16)
def _missing(kubectl: Kubectl, service: bool, launches: bool) -> tuple[str, ...]:
    wanted = [p for p in PERMISSIONS if (service or not p.service_only)
              and (launches or not p.launcher_only)]
    answers = kubectl.create([p.review(PLACEHOLDER_NAMESPACE) for p in wanted])
    if len(answers) != len(wanted):
        raise LabError(f"asked {len(wanted)} access reviews, got {len(answers)} answers")
    return tuple(p.shown() for p, a in zip(wanted, answers, strict=True)
                 if not a.get("status", {}).get("allowed", False))


def node_summary(node: dict[str, Any]) -> dict[str, Any]:
    status = node.get("status", {})
    info = status.get("nodeInfo", {})
    return {
        "kubelet": info.get("kubeletVersion", ""),
        "runtime": info.get("containerRuntimeVersion", ""),
        "kernel": info.get("kernelVersion", ""),
        "os": info.get("osImage", ""),
        "addresses": {a.get("type", ""): a.get("address", "") for a in status.get("addresses", [])},
        "pod_cidr": node.get("spec", {}).get("podCIDR", ""),
    }


def ready(node: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in node.get("status", {}).get("conditions", []))


def images_on(node: dict[str, Any]) -> set[str]:
    return {name for image in node.get("status", {}).get("images", [])
            for name in image.get("names", [])}


def check_cluster(kubectl: Kubectl, wanted: tuple[str, ...], *, service: bool,
                  local_image: str | None, launches: bool = False) -> ClusterFacts:
    """The checks of the module docstring; ``local_image``: vnetbench's own image (must be
    on every node), None when the user named one; ``launches``: the lab's pods will exec
    into each other (MPI)."""
    server, client = _versions(kubectl)
    missing = _missing(kubectl, service, launches)
    if missing:
        raise UnsupportedError(f"the user of {kubectl.cluster} may not {', '.join(missing)}: "
                               "grant the ClusterRole of docs/kubernetes.md (vnetbench creates "
                               "its own namespace, pods, services and execs into the pods)")
    listed = kubectl.objects(["get", "nodes"]).get("items", [])
    nodes = {n.get("metadata", {}).get("name", ""): n for n in listed}
    unknown = [name for name in wanted if name not in nodes]
    if unknown:
        raise UnsupportedError(f"no node {', '.join(unknown)} in the cluster of {kubectl.cluster}"
                               f" (its nodes: {', '.join(sorted(nodes)) or 'none'}); fix the "
                               "layer's nodes")
    not_ready = [name for name in wanted if not ready(nodes[name])]
    if not_ready:
        raise UnsupportedError(f"node {', '.join(not_ready)} of {kubectl.cluster} is not Ready; "
                               "use Ready nodes (kubectl get nodes)")
    if local_image is not None:
        lacking = [name for name in wanted if local_image not in images_on(nodes[name])
                   and len(nodes[name].get("status", {}).get("images", [])) < 50]
        if lacking:
            raise UnsupportedError(
                f"node {', '.join(lacking)} does not have vnetbench's image {local_image} (built "
                "here, no registry has it): write it with `python3 -m "
                "vnetbench.backends.kubernetes.image --out node-image.tar` and run `ctr -n "
                "k8s.io images import node-image.tar` on each node (kubelet lists a new image "
                "within a minute), or name an image of yours (the layer's image option)")
    return ClusterFacts(server, client, {name: node_summary(nodes[name]) for name in wanted})
