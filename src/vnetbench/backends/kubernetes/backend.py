"""The ``kubernetes`` backend: a lab whose nodes are pods of a real cluster.

``realise`` (nothing is built on this machine):
1. checks the cluster (``preflight``: reachable, permissions, nodes, image), refusing in one
   line before anything is created;
2. records the cluster and the run's namespace in the run's work directory (``RECORD``), so
   ``vnetbench clean`` reaches a killed run's objects;
3. creates the namespace ``vnb<id>``, one pod per vnetbench node pinned to its Kubernetes
   node, a ClusterIP Service per pod (``k8s-service``) and an evidence pod per Kubernetes node
   (``manifests``), in one ``kubectl create``; waits until every pod runs (failing at once,
   with the node's message, on an image that cannot be pulled, a pod that cannot be
   scheduled or a sandbox the CNI cannot set up);
4. ``k8s-service``: waits until each Service answers from the other pods (a probe server
   behind it, a TCP connect to its ClusterIP from every other node's pod), so the first
   trial does not measure kube-proxy catching up;
5. reads the nodes' facts (``detect``: CNI, mode, MTU, encapsulation, kube-proxy mode).

``stop`` deletes the namespace (only one labelled with this run and this machine) and waits
until it is gone, so nothing of the run is left: its pods, services and evidence pods go with
it. Images are never loaded or removed by a run.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vnetbench.backends.base import Backend, BackendPlan, LabContext
from vnetbench.backends.kubernetes import manifests
from vnetbench.backends.kubernetes.detect import NODE_SCRIPT, NodeFacts, cni_facts, node_facts
from vnetbench.backends.kubernetes.evidence import (
    Located,
    NodeEvidence,
    cgroup_script,
    locate_script,
    node_collectors,
    parse_cgroups,
    parse_located,
)
from vnetbench.backends.kubernetes.kubectl import Kubectl, find_kubectl
from vnetbench.backends.kubernetes.layers import K8S_LAYERS, KubernetesLayer, KubernetesOptions
from vnetbench.backends.kubernetes.node import PodNode
from vnetbench.backends.kubernetes.preflight import ClusterFacts, check_cluster
from vnetbench.collectors.base import Collector
from vnetbench.errors import LabError, UnsupportedError, VnetbenchError
from vnetbench.host.binaries import find_binary
from vnetbench.host.cleaned import CleanResult
from vnetbench.host.node import Node
from vnetbench.host.processes import ProcessTracker
from vnetbench.host.state import RunState
from vnetbench.lab.plan import Plan
from vnetbench.lab.topology import Topology
from vnetbench.layers.base import AnyLayer, LayerOptions, NodePlacement, PlanContext

RECORD = "kubernetes.json"
"""In the run's work directory: the cluster and namespace of the run (for ``clean``)."""
POLL_S = 0.3
DELETE_TIMEOUT_S = 180.0
SERVICE_TIMEOUT_S = 60.0
EVENTS_EVERY_S = 3.0
SANDBOX_TRIES = 3
BAD_WAITING = {"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName",
               "CreateContainerError", "CreateContainerConfigError", "CrashLoopBackOff",
               "RunContainerError"}
"""Container states a pod does not recover from within a lab's patience."""


@dataclass(frozen=True)
class KubernetesPlan(BackendPlan):
    """The objects the lab will create (names, the Kubernetes node of each pod)."""

    namespace: str = ""
    pods: tuple[tuple[str, str, str], ...] = ()
    """(pod, Kubernetes node, what it is)."""
    services: tuple[str, ...] = ()

    def describe(self) -> list[str]:
        lines = [f"== Kubernetes namespace {self.namespace}"]
        lines += [f"    pod {pod} on {node}: {what}" for pod, node, what in self.pods]
        lines += [f"    service {name} (ClusterIP)" for name in self.services]
        return lines

    def describe_launcher(self) -> list[str]:
        nodes = [pod for pod, _, what in self.pods if ", node n" in what]
        rights = "; ".join(f"{' '.join(r['verbs'])} {' '.join(r['resources'])}"
                           for r in manifests.launcher_rules(nodes))
        return [f"    serviceaccount, role and rolebinding {manifests.LAUNCHER} (the pods run as "
                f"it: {rights} in {self.namespace}, on the node pods {', '.join(nodes)} "
                "only)"]


def options_of(layer: AnyLayer, options: LayerOptions) -> tuple[KubernetesLayer, KubernetesOptions]:
    if not isinstance(layer, KubernetesLayer) or not isinstance(options, KubernetesOptions):
        raise LabError(f"layer {layer.name} is not a Kubernetes layer")
    return layer, options


def kubectl_for(opts: KubernetesOptions) -> Kubectl:
    kubeconfig = os.path.expanduser(opts.kubeconfig) if opts.kubeconfig else None
    return Kubectl(find_kubectl(), kubeconfig, opts.context)


def image_for(opts: KubernetesOptions) -> tuple[str, str, bool]:
    """The pods' image, its pull policy and whether it is vnetbench's own."""
    if opts.image:
        return opts.image, "IfNotPresent", False
    from vnetbench.backends.kubernetes.image import node_image
    return node_image().name, "Never", True


def write_record(path: Path, kubectl: Kubectl, namespace: str, run_id: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"kubectl": kubectl.path, "kubeconfig": kubectl.kubeconfig,
                                "context": kubectl.context, "namespace": namespace,
                                "run_id": run_id, "host": manifests.host_label()}))


def read_record(path: Path) -> tuple[Kubectl, str, str] | None:
    try:
        data = json.loads(path.read_text())
        return (Kubectl(data["kubectl"], data.get("kubeconfig"), data.get("context")),
                data["namespace"], data["run_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def delete_namespace(kubectl: Kubectl, namespace: str, run_id: str,
                     timeout: float = DELETE_TIMEOUT_S) -> bool:
    """Delete the run's namespace (only if labelled with ``run_id`` and this machine) and wait
    until it is gone; whether there was one. LabError when it does not go in time."""
    selector = (f"{manifests.RUN}={run_id},{manifests.HOST}={manifests.host_label()},"
                f"{manifests.MANAGED_BY}=vnetbench")
    got = kubectl.run(["delete", "namespace", "-l", selector, "--field-selector",
                       f"metadata.name={namespace}", "--wait=false", "-o", "name"],
                      timeout=60.0)
    if not got.stdout.strip():
        return False
    deadline = time.monotonic() + timeout
    while True:
        left = kubectl.run(["get", "namespace", namespace, "--ignore-not-found", "-o", "name"],
                           timeout=60.0)
        if not left.stdout.strip():
            return True
        if time.monotonic() > deadline:
            raise LabError(f"namespace {namespace} of {kubectl.cluster} still exists "
                           f"{timeout:.0f}s after it was deleted (finalizers?); run `vnetbench "
                           f"clean --kubernetes {kubectl.context or 'CONTEXT'}` later")
        time.sleep(POLL_S)


def waiting_problem(pod: dict[str, Any]) -> str | None:
    """Why a pod will not run (None: it may yet)."""
    status = pod.get("status", {})
    name = pod.get("metadata", {}).get("name", "?")
    node = pod.get("spec", {}).get("nodeName") or "its node"
    if status.get("phase") in ("Failed", "Succeeded"):
        return f"pod {name} on {node} stopped ({status.get('phase')}): {status.get('message', '')}"
    for c in status.get("containerStatuses", []):
        waiting = c.get("state", {}).get("waiting", {})
        if waiting.get("reason") in BAD_WAITING:
            return (f"pod {name} on {node}: {waiting['reason']}: "
                    f"{waiting.get('message', '').strip()[:300]}")
    for cond in status.get("conditions", []):
        if (cond.get("type") == "PodScheduled" and cond.get("status") == "False"
                and cond.get("reason") == "Unschedulable"):
            return f"pod {name} cannot be scheduled: {cond.get('message', '')}"
    return None


def sandbox_reason(message: str) -> str:
    """The part of a FailedCreatePodSandBox message that says why (the CNI's or the
    runtime's words), without the sandbox id."""
    for mark in ('failed (add): ', "OCI runtime create failed: ", "failed to setup network"):
        if mark in message:
            return message[message.index(mark):][:400]
    return message[-400:]


def running(pod: dict[str, Any]) -> bool:
    status = pod.get("status", {})
    return bool(status.get("phase") == "Running" and status.get("podIP") and all(
        c.get("ready") for c in status.get("containerStatuses", [{}])))


@dataclass
class Cluster:
    """A realised Kubernetes lab (what ``stop``, ``facts`` and the collectors need)."""

    kubectl: Kubectl
    spec: manifests.PodSpec
    opts: KubernetesOptions
    facts: ClusterFacts
    tracker: ProcessTracker
    programs: dict[str, str]
    created: bool = False
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    evidence: dict[int, PodNode] = field(default_factory=dict)
    node_facts: dict[int, NodeFacts] = field(default_factory=dict)
    located: dict[str, Located] = field(default_factory=dict)
    cgroups: dict[str, str] = field(default_factory=dict)
    """vnetbench node name -> its pod's CPU usage file on its Kubernetes node."""
    hosts: dict[int, PodNode] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    detected: dict[str, Any] = field(default_factory=dict)
    launcher: bool = False
    """The node pods run as the launcher's service account (``manifests.launcher``)."""

    def pod_node(self, index: int, host: int, pod: dict[str, Any], host_network: bool
                 ) -> PodNode:
        status = pod.get("status", {})
        return PodNode(index, host, None, status.get("podIP", ""), "eth0", kubectl=self.kubectl,
                       k8s_namespace=self.spec.namespace, pod=pod["metadata"]["name"],
                       k8s_node=pod.get("spec", {}).get("nodeName", ""),
                       host_network=host_network, tracker=self.tracker, programs=self.programs,
                       launcher=self.launcher and index >= 0)

    def wait_running(self, names: list[str], timeout: float) -> dict[str, dict[str, Any]]:
        """Every pod of ``names`` running; LabError with the reason when one will not."""
        deadline = time.monotonic() + timeout
        next_events = time.monotonic() + EVENTS_EVERY_S
        while True:
            items = self.kubectl.objects(["get", "pods", "-n", self.spec.namespace,
                                          "-l", f"{manifests.RUN}={self.spec.run_id}"])
            pods = {p["metadata"]["name"]: p for p in items.get("items", [])}
            for name in names:
                problem = waiting_problem(pods[name]) if name in pods else None
                if problem:
                    raise LabError(problem)
            if all(name in pods and running(pods[name]) for name in names):
                return pods
            if time.monotonic() > next_events:  # a sandbox failing again and again: say why
                next_events = time.monotonic() + EVENTS_EVERY_S
                failing = self.failing_sandboxes(names)
                if failing:
                    raise LabError(failing)
            if time.monotonic() > deadline:
                late = [n for n in names if n not in pods or not running(pods[n])]
                raise LabError(f"pods {', '.join(late)} not running after {timeout:.0f}s"
                               f"{self.events_tail()}")
            time.sleep(POLL_S)

    def failing_sandboxes(self, names: list[str]) -> str | None:
        """The message of a pod whose sandbox failed ``SANDBOX_TRIES`` times (the runtime
        or the CNI refuses it: waiting longer will not help)."""
        try:
            got = self.kubectl.objects(["get", "events", "-n", self.spec.namespace])
        except LabError:
            return None
        tries: dict[str, int] = {}
        for e in got.get("items", []):
            obj = e.get("involvedObject", {}).get("name", "")
            if obj not in names or e.get("reason") != "FailedCreatePodSandBox":
                continue  # each try is an event of its own (the sandbox id differs)
            tries[obj] = tries.get(obj, 0) + (e.get("count") or 1)
            if tries[obj] >= SANDBOX_TRIES:
                return (f"pod {obj}: its node cannot set up its sandbox ({tries[obj]} tries): "
                        f"{sandbox_reason(e.get('message', ''))}")
        return None

    def events_tail(self) -> str:
        try:
            got = self.kubectl.objects(["get", "events", "-n", self.spec.namespace])
        except LabError:
            return ""
        warnings = [f"{e.get('involvedObject', {}).get('name', '')}: {e.get('reason', '')}: "
                    f"{e.get('message', '')}" for e in got.get("items", [])
                    if e.get("type") == "Warning"]
        return f" (events: {' | '.join(w[:200] for w in warnings[-3:])})" if warnings else ""


class KubernetesBackend(Backend):
    """Nodes are pods of a Kubernetes cluster (see the module docstring)."""

    name = "kubernetes"
    host_kind = "machine"
    layers = K8S_LAYERS

    def __init__(self) -> None:
        self.cluster: Cluster | None = None

    @classmethod
    def check(cls, layer: AnyLayer) -> None:
        if not isinstance(layer, KubernetesLayer):
            raise UnsupportedError(f"layer {layer.name!r} is not a Kubernetes layer")

    @classmethod
    def preflight(cls, layer: AnyLayer, options: LayerOptions, hosts: int, *,
                  launches: bool = False) -> None:
        """Check the cluster before a run's first trial (creates nothing)."""
        lay, opts = options_of(layer, options)
        if not opts.nodes or hosts > len(opts.nodes):
            raise UnsupportedError(f"layer {layer.name}: {hosts} host(s) asked for, "
                                   f"{len(opts.nodes)} Kubernetes node(s) named: list the nodes "
                                   f"to use, {layer.name}: {{nodes: [NODE, ...]}}")
        image, _, own = image_for(opts)
        check_cluster(kubectl_for(opts), opts.nodes[:hosts], service=lay.service,
                      local_image=image if own else None, launches=launches)

    @classmethod
    def plan(cls, topo: Topology, layer: AnyLayer, options: LayerOptions, ctx: PlanContext,
             placements: tuple[NodePlacement, ...], services: tuple[int, ...],
             kernel: Plan) -> BackendPlan:
        lay, opts = options_of(layer, options)
        ns = topo.names.prefix
        kind = "hostNetwork pod" if lay.host_network else "pod"
        pods = [(f"{ns}-n{p.index}", opts.nodes[p.host], f"{kind}, node n{p.index}")
                for p in placements]
        if opts.evidence:
            pods += [(f"{ns}-ev{i}", opts.nodes[i], "evidence (privileged, hostNetwork, hostPID)")
                     for i in range(topo.hosts)]
        if topo.resources.cpuset is not None:
            raise LabError(f"layer {layer.name}: resources.cpuset is not applied to pods (the "
                           "nodes' CPU manager decides); give cpus and memory, which become the "
                           "pods' limits")
        if lay.service and not services:
            raise LabError(f"layer {layer.name} needs the ports the workloads serve on (a "
                           "workload with a port option)")
        names = tuple(f"{ns}-n{p.index}" for p in placements) if lay.service else ()
        return KubernetesPlan(namespace=ns, pods=tuple(pods), services=names)

    @classmethod
    def local_kernel(cls, kernel: Plan, backend_plan: BackendPlan) -> Plan:
        return Plan((), ())

    def realise(self, lab: LabContext) -> list[Node]:
        lay, opts = options_of(lab.plan.layer, lab.plan.options)
        topo = lab.topo
        t0 = time.monotonic()
        kubectl = kubectl_for(opts)
        image, policy, own = image_for(opts)
        wanted = opts.nodes[:topo.hosts]
        facts = check_cluster(kubectl, wanted, service=lay.service,
                              local_image=image if own else None, launches=lab.plan.launches)
        spec = manifests.PodSpec(topo.names.short_id, image, policy, manifests.host_label())
        if kubectl.run(["get", "namespace", spec.namespace, "--ignore-not-found", "-o", "name"]
                       ).stdout.strip():
            raise UnsupportedError(f"namespace {spec.namespace} already exists in "
                                   f"{kubectl.cluster} (another vnetbench run's?); run again "
                                   "(another id is chosen)")
        write_record(lab.work_dir / RECORD, kubectl, spec.namespace, spec.run_id)
        programs = {str(find_binary("vnetbench-probe")): "/usr/local/bin/vnetbench-probe"}
        if own:
            from vnetbench.backends.kubernetes.image import node_image
            programs.update(node_image().programs)
        c = self.cluster = Cluster(kubectl, spec, opts, facts, lab.tracker, programs)
        c.timings["checks_s"] = time.monotonic() - t0
        objects: list[manifests.Manifest] = [manifests.namespace(spec)]
        c.launcher = lab.plan.launches
        if c.launcher:
            objects += manifests.launcher(spec, [p.index for p in lab.plan.placements])
        for p in lab.plan.placements:
            objects.append(manifests.node_pod(spec, p.index, wanted[p.host],
                                              host_network=lay.host_network,
                                              res=topo.resources if topo.resources.any else None,
                                              launcher=c.launcher))
        if opts.evidence:
            objects += [manifests.evidence_pod(spec, i, wanted[i]) for i in range(topo.hosts)]
        if lay.service:
            objects += [manifests.service(spec, p.index, lab.plan.services)
                        for p in lab.plan.placements]
        t1 = time.monotonic()
        c.created = True  # from here on, stop deletes the namespace (if it was made)
        made = kubectl.create(objects)
        cluster_ips = {o["metadata"]["name"]: o.get("spec", {}).get("clusterIP", "")
                       for o in made if o.get("kind") == "Service"}
        names = [o["metadata"]["name"] for o in objects if o["kind"] == "Pod"]
        c.pods = c.wait_running(names, opts.ready_timeout)
        c.timings["pods_s"] = time.monotonic() - t1
        nodes: list[Node] = []
        for p in lab.plan.placements:
            node = c.pod_node(p.index, p.host, c.pods[f"{spec.namespace}-n{p.index}"],
                              lay.host_network)
            node.service_ip = cluster_ips.get(node.pod)
            nodes.append(node)
        if opts.evidence:
            c.evidence = {i: c.pod_node(-100 - i, i, c.pods[f"{spec.namespace}-ev{i}"], True)
                          for i in range(topo.hosts)}
        t2 = time.monotonic()
        self._read_nodes(c, [n for n in nodes if isinstance(n, PodNode)])
        c.detected["twin"] = lay.twin_for(str(c.detected.get("mode", "")))
        c.timings["facts_s"] = time.monotonic() - t2
        if lay.service:
            t3 = time.monotonic()
            wait_services(c, [n for n in nodes if isinstance(n, PodNode)], lab.plan.services[0])
            c.timings["service_s"] = time.monotonic() - t3
        c.timings["total_s"] = time.monotonic() - t0
        return nodes

    def _read_nodes(self, c: Cluster, nodes: list[PodNode]) -> None:
        """The nodes' facts and where each pod is (through the evidence pods), the CNI."""
        pod_mtu: int | None = None
        for i, ev in c.evidence.items():
            mine = [n.pod for n in nodes if n.host == i and not n.host_network]
            uids = {n.name: c.pods[n.pod]["metadata"]["uid"] for n in nodes if n.host == i}
            got = ev.run(["sh", "-c", NODE_SCRIPT + locate_script(mine) + cgroup_script(uids)],
                         timeout=60.0)
            c.node_facts[i] = node_facts(got.stdout)
            c.located.update(parse_located(got.stdout))
            c.cgroups.update(parse_cgroups(got.stdout))
        own = [n for n in nodes if not n.host_network]
        if own and own[0].pod in c.located:
            pod_mtu = c.located[own[0].pod].mtu or None
        elif own:
            got = own[0].run(["cat", "/sys/class/net/eth0/mtu"], check=False, timeout=30.0)
            pod_mtu = int(got.stdout) if got.stdout.strip().isdigit() else None
        by_name = {c.opts.nodes[i]: f for i, f in c.node_facts.items()}
        c.detected = cni_facts(by_name, pod_mtu) if by_name else {
            "cni": "unknown (evidence pods off)", "mtu": pod_mtu}
        if not own:  # hostNetwork pods: the path's MTU is the nodes' own
            c.detected["mtu"] = c.detected.get("node_mtu")
        if c.detected.get("kube_proxy", "unknown") == "unknown":
            c.detected["kube_proxy"] = kube_proxy_from_config(c.kubectl)

    def host_node(self, host: int) -> Node | None:
        """Host ``host``'s own stack: a hostNetwork pod on its Kubernetes node, made now."""
        c = self.cluster
        if c is None:
            return None
        if host not in c.hosts:
            if not 0 <= host < len(c.opts.nodes):
                raise LabError(f"no host {host} in this Kubernetes lab")
            name = f"{c.spec.namespace}-h{host}"
            c.kubectl.create([manifests.host_pod(c.spec, host, c.opts.nodes[host])])
            pod = c.wait_running([name], c.opts.ready_timeout)[name]
            c.hosts[host] = c.pod_node(-1 - host, host, pod, True)
        return c.hosts[host]

    def collectors(self, nodes: list[Node]) -> list[Collector] | None:
        c = self.cluster
        if c is None:
            return None
        pods = [n for n in nodes if isinstance(n, PodNode)]
        out: list[Collector] = []
        for host in sorted({n.host for n in pods}):
            mine = tuple(n for n in pods if n.host == host)
            ev = NodeEvidence(host, c.opts.nodes[host], mine, c.evidence.get(host),
                              c.node_facts.get(host),
                              {n.pod: c.located[n.pod] for n in mine if n.pod in c.located},
                              {n.name: c.cgroups[n.name] for n in mine if n.name in c.cgroups})
            out += node_collectors(ev)
        return out

    def facts(self) -> dict[str, object]:
        c = self.cluster
        if c is None:
            return {}
        pods = [{"name": name, "node": p.get("spec", {}).get("nodeName", ""),
                 "ip": p.get("status", {}).get("podIP", ""),
                 "host_network": bool(p.get("spec", {}).get("hostNetwork", False))}
                for name, p in sorted(c.pods.items())]
        return {"kubernetes": {
            "context": c.kubectl.context, "server_version": c.facts.server_version,
            "kubectl_version": c.facts.client_version, "namespace": c.spec.namespace,
            "image": c.spec.image, "evidence_pods": c.opts.evidence,
            "nodes": c.facts.nodes, **c.detected, "pods": pods,
            "seconds": {k: round(v, 3) for k, v in c.timings.items()},
        }}

    def stop(self, lab: LabContext) -> list[str]:
        c = self.cluster
        if c is None or not c.created:
            return []
        try:
            delete_namespace(c.kubectl, c.spec.namespace, c.spec.run_id)
        except VnetbenchError as exc:
            return [f"deleting namespace {c.spec.namespace}: {exc}"]
        return []

    @classmethod
    def clean_leftovers(cls, state: RunState) -> CleanResult:
        if not state.work_dir:
            return CleanResult()
        record = read_record(Path(state.work_dir) / RECORD)
        if record is None:
            return CleanResult()
        kubectl, namespace, run_id = record
        try:
            if delete_namespace(kubectl, namespace, run_id):
                return CleanResult([f"deleted namespace {namespace} of {kubectl.cluster}"])
        except VnetbenchError as exc:
            return CleanResult(failed=[f"namespace {namespace} of {kubectl.cluster} not "
                                       f"deleted: {exc}"])
        return CleanResult()


def kube_proxy_from_config(kubectl: Kubectl) -> str:
    """kube-proxy's mode from kubeadm's ConfigMap (kube-system/kube-proxy), when the nodes
    did not say; ``unknown`` when neither tells."""
    try:
        cm = kubectl.objects(["get", "configmap", "kube-proxy", "-n", "kube-system"])
    except LabError:
        return "unknown"
    for line in cm.get("data", {}).get("config.conf", "").splitlines():
        key, _, value = line.strip().partition(":")
        if key == "mode":
            return value.strip().strip("\"'") or "iptables"  # kubeadm's empty mode: iptables
    return "unknown"


def wait_services(c: Cluster, nodes: list[PodNode], port: int) -> None:
    """Each Service answers at its ClusterIP from a pod on every Kubernetes node of the lab
    (a probe server behind it for the check); LabError after ``SERVICE_TIMEOUT_S``."""
    probe = next(iter(c.programs))
    for server in nodes:
        if not server.service_ip:
            continue
        clients = {n.host: n for n in nodes if n is not server}
        if not clients:
            continue
        proc = server.spawn([probe, "serve", "--port", str(port)])
        try:
            server.wait_listening(port, timeout=30.0)
            for client in clients.values():
                deadline = time.monotonic() + SERVICE_TIMEOUT_S
                while True:
                    got = client.run(["sh", "-c", f"nc -w 2 {server.service_ip} {port} "
                                                  "</dev/null"], check=False, timeout=30.0)
                    if got.returncode == 0:
                        break
                    if time.monotonic() > deadline:
                        raise LabError(f"Service {server.pod} ({server.service_ip}:{port}) does "
                                       f"not answer from {client.where} after "
                                       f"{SERVICE_TIMEOUT_S:.0f}s (kube-proxy running there?)")
                    time.sleep(POLL_S)
        finally:
            c.tracker.stop(proc)
