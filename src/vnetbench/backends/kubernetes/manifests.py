"""The objects a Kubernetes lab creates, as plain dicts (pure: nothing talks to a cluster).

Naming and labels (every object carries the run's labels, so ``vnetbench clean
--kubernetes`` finds a killed run's objects and only them):

    namespace   vnb<id>                 the run's own; deleting it deletes everything below
    pods        vnb<id>-n<j>            vnetbench node j, pinned to Kubernetes node nodes[host]
                vnb<id>-h<i>            host i's own stack (hostNetwork), made when a workload
                                        asks for it (``client: host``)
                vnb<id>-ev<i>           evidence on host i: privileged, hostNetwork, hostPID,
                                        /etc, /run and /sys/fs/cgroup of the node mounted
                                        read-only (at /host/etc, /host/run, /host/cgroup)
    services    vnb<id>-n<j>            k8s-service: a ClusterIP Service per node pod
    launcher    vnb-launcher            a lab whose workload launches programs across its
                                        nodes (MPI): a ServiceAccount of the node pods, a
                                        Role to get the run's node pods and exec into them,
                                        by name (never the evidence or host pods), and its
                                        RoleBinding (``launcher``)

    labels      app.kubernetes.io/managed-by: vnetbench
                vnetbench.io/run: <id>          the run (lab) id
                vnetbench.io/host: <hostname>   the machine that ran vnetbench (clean there)
                vnetbench.io/machine: <hash>    the SHA-256 of its /etc/machine-id, 16 digits
                                                (two machines sharing a hostname told apart)
                vnetbench.io/role: node | host | evidence
                vnetbench.io/node: n<j>         (node pods: what the Service selects)

A pod is pinned with a required node affinity on ``metadata.name`` (as DaemonSets are), tolerates
every taint (the user named the node), has no service account token (but the launcher's, on
node pods of a lab that launches: ``kubectl exec`` from one pod into another), no service links, a
termination grace of 0 s, and runs ``sleep`` as its idle main process; the workloads run by
``kubectl exec``. Each pod's environment names it (``VNB_POD``): the evidence pod finds
a pod's processes, and through them its network namespace, by that variable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Required, TypedDict

from vnetbench.host.identity import host_name, machine_hash
from vnetbench.lab.topology import Resources

MANAGED_BY = "app.kubernetes.io/managed-by"
RUN = "vnetbench.io/run"
HOST = "vnetbench.io/host"
MACHINE = "vnetbench.io/machine"
ROLE = "vnetbench.io/role"
NODE = "vnetbench.io/node"
POD_ENV = "VNB_POD"
CONTAINER = "node"
IDLE = ["/bin/sleep", "2147483647"]
LAUNCHER = "vnb-launcher"
class ObjectMeta(TypedDict, total=False):
    """An object's ``metadata``: its name, namespace (namespaced kinds) and labels."""

    name: Required[str]
    namespace: str
    labels: dict[str, str]


class Manifest(TypedDict, total=False):
    """One object to create: its kind and metadata, then what that kind holds (``spec``;
    a Role's ``rules``, a RoleBinding's ``roleRef`` and ``subjects``)."""

    apiVersion: Required[str]
    kind: Required[str]
    metadata: Required[ObjectMeta]
    spec: dict[str, object]
    rules: list[PolicyRule]
    roleRef: dict[str, str]
    subjects: list[dict[str, str]]


class PolicyRule(TypedDict):
    """One rule of a Role: these verbs on these resources (by name) of the API groups."""

    apiGroups: list[str]
    resources: list[str]
    verbs: list[str]
    resourceNames: list[str]


def launcher_rules(pods: Sequence[str]) -> list[PolicyRule]:
    """What ``kubectl exec`` from one node pod into another needs, on the run's node pods
    by name and nothing else (``get`` on pods/exec: the WebSocket protocol kubectl uses opens
    the session with a GET): the evidence pods (privileged, hostPID) and the host pods stay
    out of the node pods' reach."""
    names = sorted(pods)
    return [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": names},
        {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create", "get"],
         "resourceNames": names},
    ]


def node_pod_name(spec: PodSpec, j: int) -> str:
    return f"{spec.namespace}-n{j}"


def machine_label() -> str:
    """This machine's identity as a label value (``identity.machine_hash``)."""
    return machine_hash()


def host_label() -> str:
    """This machine's name as a label value (``identity.host_name``)."""
    return host_name()


@dataclass(frozen=True)
class PodSpec:
    """What a lab's pods share."""

    run_id: str
    """The short id (``vnb<id>`` is the namespace)."""
    image: str
    pull_policy: str
    """``Never`` for vnetbench's own image (no registry has it), else ``IfNotPresent``."""
    host: str = ""
    """This machine's label (``host_label()``)."""

    @property
    def namespace(self) -> str:
        return f"vnb{self.run_id}"

    def labels(self, role: str, **more: str) -> dict[str, str]:
        machine = machine_label()
        return {MANAGED_BY: "vnetbench", RUN: self.run_id, HOST: self.host or host_label(),
                **({MACHINE: machine} if machine else {}), ROLE: role, **more}


def namespace(spec: PodSpec) -> Manifest:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": spec.namespace, "labels": spec.labels("namespace")}}


def _pinned(k8s_node: str) -> dict[str, object]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [k8s_node]}]}]}}}


def resources(res: Resources) -> dict[str, dict[str, str]]:
    """A container's requests and limits from the scenario's per-node resources (equal
    requests and limits: the pod's QoS is Guaranteed when both are given)."""
    limits: dict[str, str] = {}
    if res.cpus is not None:
        limits["cpu"] = f"{round(res.cpus * 1000)}m"
    if res.memory is not None:
        limits["memory"] = str(res.memory)
    return {"limits": limits, "requests": dict(limits)} if limits else {}


def pod(spec: PodSpec, name: str, k8s_node: str, role: str, *, host_network: bool = False,
        labels: dict[str, str] | None = None, res: Resources | None = None,
        privileged: bool = False, launcher: bool = False) -> Manifest:
    container: dict[str, object] = {
        "name": CONTAINER, "image": spec.image, "imagePullPolicy": spec.pull_policy,
        "command": list(IDLE), "env": [{"name": POD_ENV, "value": name}],
    }
    if res is not None and resources(res):
        container["resources"] = resources(res)
    body: dict[str, object] = {
        "affinity": _pinned(k8s_node),
        "tolerations": [{"operator": "Exists"}],
        "terminationGracePeriodSeconds": 0,
        "automountServiceAccountToken": launcher,
        "enableServiceLinks": False,
        "restartPolicy": "Never",
        "containers": [container],
    }
    if launcher:
        body["serviceAccountName"] = LAUNCHER
    if host_network:
        body["hostNetwork"] = True
        body["dnsPolicy"] = "ClusterFirstWithHostNet"
    if privileged:
        body["hostPID"] = True
        container["securityContext"] = {"privileged": True}
        host = {"etc": "/etc", "run": "/run", "cgroup": "/sys/fs/cgroup"}
        container["volumeMounts"] = [{"name": name, "mountPath": f"/host/{name}",
                                      "readOnly": True} for name in host]
        body["volumes"] = [{"name": name, "hostPath": {"path": path, "type": "Directory"}}
                           for name, path in host.items()]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": spec.namespace,
                         "labels": spec.labels(role, **(labels or {}))},
            "spec": body}


def node_pod(spec: PodSpec, j: int, k8s_node: str, *, host_network: bool,
             res: Resources | None = None, launcher: bool = False) -> Manifest:
    """vnetbench node ``j`` (``launcher``: with the launcher's service account)."""
    return pod(spec, node_pod_name(spec, j), k8s_node, "node", host_network=host_network,
               labels={NODE: f"n{j}"}, res=res, launcher=launcher)


def launcher(spec: PodSpec, nodes: Sequence[int]) -> list[Manifest]:
    """The launcher's ServiceAccount, Role (exec into node pods ``nodes``, by name: see
    ``launcher_rules``) and RoleBinding (before the pods that use it)."""
    meta: ObjectMeta = {"name": LAUNCHER, "namespace": spec.namespace,
                        "labels": spec.labels("launcher")}
    rbac = "rbac.authorization.k8s.io/v1"
    rules = launcher_rules([node_pod_name(spec, j) for j in nodes])
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta.copy()},
        {"apiVersion": rbac, "kind": "Role", "metadata": meta.copy(), "rules": rules},
        {"apiVersion": rbac, "kind": "RoleBinding", "metadata": meta.copy(),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                     "name": LAUNCHER},
         "subjects": [{"kind": "ServiceAccount", "name": LAUNCHER,
                       "namespace": spec.namespace}]},
    ]


def host_pod(spec: PodSpec, i: int, k8s_node: str) -> Manifest:
    """Host ``i``'s own stack: a hostNetwork pod (a workload's ``client: host``)."""
    return pod(spec, f"{spec.namespace}-h{i}", k8s_node, "host", host_network=True)


def evidence_pod(spec: PodSpec, i: int, k8s_node: str) -> Manifest:
    """The counters and facts of host ``i``'s Kubernetes node."""
    return pod(spec, f"{spec.namespace}-ev{i}", k8s_node, "evidence", host_network=True,
               privileged=True)


def service(spec: PodSpec, j: int, ports: Sequence[int]) -> Manifest:
    """A ClusterIP Service selecting node ``j``'s pod, TCP and UDP on every port."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": f"{spec.namespace}-n{j}", "namespace": spec.namespace,
                         "labels": spec.labels("service", **{NODE: f"n{j}"})},
            "spec": {"type": "ClusterIP", "selector": {RUN: spec.run_id, NODE: f"n{j}"},
                     "ports": [{"name": f"{proto.lower()}-{port}", "protocol": proto,
                                "port": port, "targetPort": port}
                               for port in ports for proto in ("TCP", "UDP")]}}
