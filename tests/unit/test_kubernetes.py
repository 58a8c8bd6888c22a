"""The kubernetes backend's pure parts (no cluster): its layers' plans, the objects a lab
creates, the node-facts parser and CNI summary, the permission list, the evidence pod's
locator output, the pod-side supervisor, and vnetbench's pod image."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from vnetbench.backends.catalog import LAYERS, get_layer
from vnetbench.backends.kubernetes import manifests
from vnetbench.backends.kubernetes.backend import KubernetesPlan, running, waiting_problem
from vnetbench.backends.kubernetes.detect import cni_facts, node_facts
from vnetbench.backends.kubernetes.evidence import NodeEvidence, parse_located
from vnetbench.backends.kubernetes.layers import KubernetesOptions
from vnetbench.backends.kubernetes.node import SUPERVISE
from vnetbench.backends.kubernetes.preflight import PERMISSIONS
from vnetbench.backends.lab_plan import make_plan
from vnetbench.errors import LabError
from vnetbench.lab.topology import Addresses, Names, Resources, Topology
from vnetbench.layers.base import PlanContext

CTX = PlanContext(run_dir=Path("/run/vnetbench/work/abcd"))


def plan(layer: str, hosts: int, count: int, services: tuple[int, ...] = (7000,),
         **options: object) -> KubernetesPlan:
    topo = Topology(hosts=hosts, nodes=count, names=Names("abcd"), addresses=Addresses("10.210"))
    lay = get_layer(layer)
    lab = make_plan(topo, lay, lay.options.model_validate(options), CTX, services=services)
    assert lab.kernel.namespaces == () and not list(lab.kernel.actions())
    assert isinstance(lab.backend, KubernetesPlan)
    return lab.backend


def test_layers_are_in_the_catalogue_with_their_backend() -> None:
    names = {n for n, cls in LAYERS.items() if cls.backend == "kubernetes"}
    assert names == {"k8s-pod", "k8s-hostnetwork", "k8s-service"}
    assert LAYERS["k8s-hostnetwork"].shares_host_netns  # distinct ports on one node's stack


def test_plan_pins_nodes_round_robin_and_adds_evidence_pods() -> None:
    p = plan("k8s-pod", hosts=2, count=3, nodes=["a", "b", "c"])
    assert p.namespace == "vnbabcd"
    pods = {name: node for name, node, _ in p.pods}
    assert pods == {"vnbabcd-n0": "a", "vnbabcd-n1": "b", "vnbabcd-n2": "a",
                    "vnbabcd-ev0": "a", "vnbabcd-ev1": "b"}
    assert p.services == ()
    assert "pod vnbabcd-n1 on b" in "\n".join(p.describe())


def test_plan_same_node_service_and_no_evidence() -> None:
    p = plan("k8s-service", hosts=1, count=2, nodes=["a", "b"], evidence=False)
    assert [(n, k) for n, k, _ in p.pods] == [("vnbabcd-n0", "a"), ("vnbabcd-n1", "a")]
    assert p.services == ("vnbabcd-n0", "vnbabcd-n1")


def test_plan_refuses_too_few_nodes_and_no_ports() -> None:
    with pytest.raises(LabError, match=r"2 hosts asked for.*1 Kubernetes node"):
        plan("k8s-pod", hosts=2, count=2, nodes=["a"])
    with pytest.raises(LabError, match="needs the Kubernetes nodes"):
        plan("k8s-pod", hosts=1, count=2)
    with pytest.raises(LabError, match="ports the workloads serve"):
        plan("k8s-service", hosts=1, count=2, services=(), nodes=["a"])


def test_options_refuse_bad_node_names() -> None:
    with pytest.raises(ValueError, match="not a Kubernetes node name"):
        KubernetesOptions.model_validate({"nodes": ["Bad_Name"]})
    with pytest.raises(ValueError, match="listed twice"):
        KubernetesOptions.model_validate({"nodes": ["a", "a"]})


SPEC = manifests.PodSpec("abcd", "localhost/vnetbench/node:x", "Never", host="ctl")


def test_node_pod_is_pinned_labelled_and_quick_to_delete() -> None:
    pod = manifests.node_pod(SPEC, 3, "worker-1", host_network=False,
                             res=Resources(cpus=0.5, memory=64 * 2**20))
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["name"] == "vnbabcd-n3" and meta["namespace"] == "vnbabcd"
    machine = manifests.machine_label()
    assert meta["labels"] == {manifests.MANAGED_BY: "vnetbench", manifests.RUN: "abcd",
                              manifests.HOST: "ctl", manifests.ROLE: "node",
                              manifests.NODE: "n3",
                              **({manifests.MACHINE: machine} if machine else {})}
    term = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["worker-1"]
    assert spec["terminationGracePeriodSeconds"] == 0 and not spec["automountServiceAccountToken"]
    assert "hostNetwork" not in spec
    c = spec["containers"][0]
    assert c["imagePullPolicy"] == "Never"
    assert c["resources"]["limits"] == {"cpu": "500m", "memory": str(64 * 2**20)}
    assert {"name": manifests.POD_ENV, "value": "vnbabcd-n3"} in c["env"]


def test_evidence_pod_is_privileged_on_the_nodes_stack() -> None:
    pod = manifests.evidence_pod(SPEC, 1, "worker-2")
    spec = pod["spec"]
    assert spec["hostNetwork"] and spec["hostPID"]
    assert spec["containers"][0]["securityContext"] == {"privileged": True}
    assert all(m["readOnly"] for m in spec["containers"][0]["volumeMounts"])
    assert {v["hostPath"]["type"] for v in spec["volumes"]} == {"Directory"}  # never created
    assert {v["hostPath"]["path"] for v in spec["volumes"]} == {"/etc", "/run", "/sys/fs/cgroup"}


def test_service_selects_its_pod_on_tcp_and_udp() -> None:
    svc = manifests.service(SPEC, 0, [7000, 7100])
    assert svc["spec"]["selector"] == {manifests.RUN: "abcd", manifests.NODE: "n0"}
    assert [(p["port"], p["protocol"]) for p in svc["spec"]["ports"]] == [
        (7000, "TCP"), (7000, "UDP"), (7100, "TCP"), (7100, "UDP")]


def test_host_label_is_a_valid_label_value() -> None:
    import re
    assert re.fullmatch(r"[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?", manifests.host_label())


NODE_OUTPUT = """\
@@dev cni0 1450 1 5 bridge
@@dev eth1 1500 1 2 -
@@dev flannel.1 1450 1 4 vxlan
@@dev lo 65536 772 1 -
@@dev tunl0 1480 768 9 -
@@dev veth1234 1450 1 7 -
@@cni 10-flannel.conflist
{"cniVersion": "1.0.0", "name": "cbr0", "plugins": [{"type": "bridge"}, {"type": "portmap"}]}
@@flannel
FLANNEL_NETWORK=10.244.0.0/16
FLANNEL_SUBNET=10.244.1.1/24
FLANNEL_MTU=1450
@@route
Iface\tDestination\tGateway\tFlags
eth1\t00000000\t00000000\t0001
cni0\t0001F40A\t00000000\t0001
flannel.1\t0000F40A\t0000F40A\t0003
@@proxymode
iptables
@@healthz
{"lastUpdated": "2026-11-25T21:00:00Z", "currentTime": "2026-11-25T21:00:01Z"}
@@end
"""


def test_node_facts_and_cni_summary_for_flannel_vxlan() -> None:
    facts = node_facts(NODE_OUTPUT)
    assert facts.default_dev == "eth1" and facts.proxy_mode == "iptables"
    assert facts.tunnels() == {"flannel.1": "vxlan"}  # tunl0 carries no route: not in use
    assert facts.flannel_env["FLANNEL_MTU"] == "1450"
    got = cni_facts({"n": facts}, 1450)
    assert got["cni"] == "flannel" and got["mode"] == "vxlan" and got["encapsulation"] == "vxlan"
    assert got["mtu"] == 1450 and got["node_mtu"] == 1500 and got["kube_proxy"] == "iptables"
    assert got["cni_config"] == {"file": "10-flannel.conflist", "name": "cbr0",
                                 "plugins": ["bridge", "portmap"]}


def test_cni_summary_for_routed_bridge_and_calico_ipip() -> None:
    routed = node_facts(NODE_OUTPUT.replace("@@dev flannel.1 1450 1 4 vxlan\n", "")
                        .replace("@@flannel\n", "@@x\n"))
    got = cni_facts({"n": routed}, 1500)
    assert got["cni"] == "bridge" and got["mode"] == "routed" and got["encapsulation"] == "none"
    calico = node_facts(
        "@@dev tunl0 1480 768 9 -\n@@dev eth0 1500 1 2 -\n@@cni 10-calico.conflist\n"
        '{"name": "k8s-pod-network", "plugins": [{"type": "calico"}]}\n@@route\nIface\n'
        "eth0\t00000000\t0\t1\ntunl0\t0001F40A\t0\t1\n@@proxymode\nipvs\n")
    got = cni_facts({"n": calico}, 1480)
    assert (got["cni"], got["mode"], got["kube_proxy"]) == ("calico", "ipip", "ipvs")


def test_permissions_cover_what_a_lab_does() -> None:
    shown = {p.shown() for p in PERMISSIONS}
    assert {"create namespaces", "delete namespaces", "create pods", "create pods/exec",
            "list nodes", "create services", "get namespaces"} <= shown
    review = next(p for p in PERMISSIONS if p.subresource == "exec").review("vnb0000")
    assert review["spec"]["resourceAttributes"] == {"verb": "create", "resource": "pods",
                                                     "subresource": "exec",
                                                     "namespace": "vnb0000"}


def test_located_pods_and_the_devices_on_their_path() -> None:
    located = parse_located("@@pid vnbabcd-n0 4242 7 1450\n@@pid broken x 1 2\nnoise\n")
    assert list(located) == ["vnbabcd-n0"] and located["vnbabcd-n0"].pid == 4242
    ev = NodeEvidence(0, "a", (), None, node_facts(NODE_OUTPUT), located)
    assert ev.devices() == ["cni0", "eth1", "flannel.1", "veth1234"]


def test_pod_status_problems_are_named() -> None:
    pulling = {"metadata": {"name": "p"}, "spec": {"nodeName": "a"}, "status": {
        "phase": "Pending", "containerStatuses": [{"state": {"waiting": {
            "reason": "ErrImageNeverPull", "message": "image not present"}}}]}}
    assert waiting_problem(pulling) == "pod p on a: ErrImageNeverPull: image not present"
    unschedulable = {"metadata": {"name": "p"}, "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/2 nodes are available"}]}}
    assert "cannot be scheduled: 0/2 nodes" in str(waiting_problem(unschedulable))
    up = {"status": {"phase": "Running", "podIP": "10.244.0.5",
                     "containerStatuses": [{"ready": True}]}}
    assert running(up) and waiting_problem(up) is None
    assert not running({"status": {"phase": "Running", "podIP": ""}})


def test_supervisor_stops_the_program_when_stdin_closes(tmp_path: Path) -> None:
    """The pod side of ``spawn`` run by this machine's sh: closing its stdin stops the
    program (as when the local kubectl is stopped); a program ending on its own ends it."""
    marker, started = tmp_path / "gone", tmp_path / "started"
    prog = ["sh", "-c", f"trap 'touch {marker}; exit 0' TERM; touch {started}; "
            "while :; do sleep 0.05; done"]
    proc = subprocess.Popen(["sh", "-c", SUPERVISE, "vnetbench", *prog], stdin=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while not started.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0
    assert marker.exists()
    quick = subprocess.Popen(["sh", "-c", SUPERVISE, "vnetbench", "sh", "-c", "exit 3"],
                             stdin=subprocess.PIPE)  # its stdin stays open meanwhile
    assert quick.wait(timeout=10) == 3
    assert quick.stdin is not None
    quick.stdin.close()


def test_pod_image_is_deterministic_and_complete() -> None:
    from vnetbench.backends.kubernetes.image import PROBE_IN_IMAGE, node_image
    try:
        image = node_image()
    except Exception as exc:  # no probe or busybox on this machine
        pytest.skip(str(exc))
    digest = hashlib.sha256(image.layer).hexdigest()
    assert image.name.endswith(digest[:12]) and image.name.startswith("localhost/vnetbench/node:")
    with tarfile.open(fileobj=io.BytesIO(image.layer)) as layer:
        names = set(layer.getnames())
        assert {PROBE_IN_IMAGE.lstrip("/"), "bin/busybox", "bin/sh", "bin/sleep", "bin/cat",
                "bin/kill", "bin/nc", "bin/wget", "etc/passwd"} <= names
        assert all(m.mtime == 0 and m.uid == 0 for m in layer.getmembers())
    with tarfile.open(fileobj=io.BytesIO(image.archive())) as archive:
        extracted = archive.extractfile("manifest.json")
        assert extracted is not None
        manifest = json.loads(extracted.read())
    assert manifest[0]["RepoTags"] == [image.name]
    assert manifest[0]["Layers"] == [f"{digest}/layer.tar"]


def test_pod_image_carries_oltps_programs_where_they_run() -> None:
    """MariaDB, its install script's helpers and sysbench at their paths here (on the pods'
    PATH), with the libraries ldd names for them and the data they read at start."""
    import shutil

    from vnetbench.backends.docker.image import shared_libraries
    from vnetbench.backends.kubernetes.image import IMAGE_PATH, node_image, workload_programs
    try:
        image = node_image()
    except Exception as exc:  # no probe or busybox on this machine
        pytest.skip(str(exc))
    (oltp,) = [w for w in workload_programs() if w.workload == "oltp"]
    here = {name: shutil.which(name) for name in oltp.programs}
    if None in here.values():
        assert "oltp" not in image.workloads
        pytest.skip(f"not all of {oltp.programs} on this machine")
    assert "oltp" in image.workloads
    with tarfile.open(fileobj=io.BytesIO(image.layer)) as layer:
        members = {m.name: m for m in layer.getmembers()}
    for path in here.values():
        assert path is not None
        member = members[path.lstrip("/")]
        assert member.mode == 0o755 and str(Path(path).parent) in IMAGE_PATH.split(":")
        libs = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
        assert all(lib.lstrip("/") in members for lib in shared_libraries(libs)), path
    tables = [m for n, m in members.items() if n.endswith("/mysql_system_tables.sql")]
    assert tables and tables[0].mode == 0o644  # data, not a program
    assert any(n.endswith("/english/errmsg.sys") for n in members)
    assert "usr/share/sysbench/oltp_point_select.lua" in members
    config = json.loads(image.config)
    assert f"PATH={IMAGE_PATH}" in config["config"]["Env"]
    node_image.cache_clear()
    assert node_image().name == image.name  # the same files, the same name


def test_pod_cgroups_are_found_by_uid_with_either_driver() -> None:
    from vnetbench.backends.kubernetes.evidence import cgroup_script, parse_cgroups
    script = cgroup_script({"n0": "ab-cd"})
    assert "-name podab-cd" in script and "'*podab_cd.slice'" in script
    found = parse_cgroups("@@cg n0 /host/cgroup/cpuacct/kubepods/besteffort/podab-cd\n"
                          "@@cg n1 /host/cgroup/kubepods.slice/kubepods-podab_ce.slice\n"
                          "@@cg n2 relative\n")
    assert found == {"n0": "/host/cgroup/cpuacct/kubepods/besteffort/podab-cd/cpuacct.usage",
                     "n1": "/host/cgroup/kubepods.slice/kubepods-podab_ce.slice/cpu.stat"}


def test_twins_follow_the_cni_mode_recorded_in_the_run() -> None:
    from vnetbench.backends.kubernetes.layers import PodLayer
    from vnetbench.report.twins import twin_of, twin_pairs
    assert (twin_of("k8s-hostnetwork"), twin_of("k8s-service"), twin_of("k8s-pod")) == (
        "host", "nat", None)
    assert (PodLayer().twin_for("vxlan"), PodLayer().twin_for("routed"),
            PodLayer().twin_for("ipip")) == ("vxlan", "routed", None)
    env = {"layers": {"k8s-pod": {"kubernetes": {"mode": "vxlan", "twin": "vxlan"}},
                      "docker-bridge": {"docker": {"twin": "bridge"}}}}
    assert twin_of("k8s-pod", env) == "vxlan"
    layers = ["host", "routed", "vxlan", "nat", "k8s-hostnetwork", "k8s-pod", "k8s-service"]
    assert twin_pairs(layers, env) == [("k8s-hostnetwork", "host"), ("k8s-pod", "vxlan"),
                                       ("k8s-service", "nat")]
    assert twin_pairs(layers) == [("k8s-hostnetwork", "host"), ("k8s-service", "nat")]


def test_cpuset_is_refused_and_limits_become_the_pods() -> None:
    topo = Topology(hosts=1, nodes=2, names=Names("abcd"), addresses=Addresses("10.210"),
                    resources=Resources(cpuset="0"))
    lay = get_layer("k8s-pod")
    with pytest.raises(LabError, match="cpuset is not applied to pods"):
        make_plan(topo, lay, lay.options.model_validate({"nodes": ["a"]}), CTX)


def test_a_lab_that_launches_gives_its_node_pods_the_launchers_account() -> None:
    from vnetbench.backends.kubernetes import manifests

    spec = manifests.PodSpec("ab12", "img", "Never", "box")
    plain = manifests.node_pod(spec, 0, "a", host_network=False)["spec"]
    assert plain["automountServiceAccountToken"] is False and "serviceAccountName" not in plain
    pod = manifests.node_pod(spec, 0, "a", host_network=False, launcher=True)["spec"]
    assert pod["automountServiceAccountToken"] is True
    assert pod["serviceAccountName"] == manifests.LAUNCHER
    account, role, binding = manifests.launcher(spec, [0, 1])
    assert [o["kind"] for o in (account, role, binding)] == ["ServiceAccount", "Role",
                                                              "RoleBinding"]
    for obj in (account, role, binding):
        assert obj["metadata"]["namespace"] == "vnbab12"
        assert obj["metadata"]["labels"][manifests.RUN] == "ab12"
    exec_rule = next(r for r in role["rules"] if r["resources"] == ["pods/exec"])
    assert set(exec_rule["verbs"]) == {"create", "get"}
    # by name, the node pods only: never the privileged, hostPID evidence pods
    for rule in role["rules"]:
        assert rule["resourceNames"] == ["vnbab12-n0", "vnbab12-n1"], rule
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": manifests.LAUNCHER,
                                    "namespace": "vnbab12"}]
    # `vnetbench plan` lists them only for a lab that launches
    topo = Topology(hosts=1, nodes=2, names=Names("abcd"), addresses=Addresses("10.210"))
    lay = get_layer("k8s-pod")
    for launches in (False, True):
        text = make_plan(topo, lay, lay.options.model_validate({"nodes": ["a"]}), CTX,
                         launches=launches).render()
        assert (f"rolebinding {manifests.LAUNCHER}" in text) is launches, text
        if launches:
            assert "on the node pods vnbabcd-n0, vnbabcd-n1 only" in text, text
    assert "create get pods/exec in vnbabcd" in text
    # what the user must hold to make them is asked for only when a lab launches
    extra = {p.shown() for p in PERMISSIONS if p.launcher_only}
    assert extra == {"create serviceaccounts", "create roles.rbac.authorization.k8s.io",
                     "create rolebindings.rbac.authorization.k8s.io", "get pods/exec"}


def test_the_pods_remote_shell_runs_the_command_in_the_mapped_pod(tmp_path: Path) -> None:
    """vnb-kube-rsh as mpirun calls it (ssh-style options, a host, the daemon's words): it
    execs kubectl into the pod the map names; kubectl here is a recorder of its arguments."""
    from vnetbench.backends.kubernetes.image import KUBE_RSH

    rsh = tmp_path / "vnb-kube-rsh"
    rsh.write_text(KUBE_RSH)
    rsh.chmod(0o755)
    kubectl = tmp_path / "kubectl"
    kubectl.write_text('#!/bin/sh\nfor a in "$@"; do printf "[%s]" "$a"; done\n')
    kubectl.chmod(0o755)
    hosts = tmp_path / "hosts"
    hosts.write_text("10.1.0.2 vnbab12-n1\n10.1.0.3 vnbab12-n2\n")
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "VNB_NAMESPACE": "vnbab12"}
    got = subprocess.run([str(rsh), "--map", str(hosts), "-x", "10.1.0.3", "orted", "-mca",
                          "ess", "env"], capture_output=True, text=True, env=env, check=True)
    assert got.stdout == ("[exec][-i][-n][vnbab12][vnbab12-n2][-c][node][--][sh][-c]"
                          "[orted -mca ess env]")
    unknown = subprocess.run([str(rsh), "--map", str(hosts), "10.9.9.9", "orted"],
                             capture_output=True, text=True, env=env)
    assert unknown.returncode == 255 and "no pod for 10.9.9.9" in unknown.stderr


def test_mpi_hostfile_shares_a_daemon_between_nodes_of_one_address() -> None:
    from vnetbench.backends.netns.node import NamespaceNode
    from vnetbench.workloads.mpi.workload import hostfile

    nodes = [NamespaceNode(j, j % 2, None, ip, "eth0")
             for j, ip in enumerate(["10.0.0.1", "10.0.0.2", "10.0.0.1"])]
    assert hostfile(nodes) == "10.0.0.1 slots=2\n10.0.0.2 slots=1\n"


def test_pod_image_carries_mpi_with_its_components_and_the_remote_shell() -> None:
    from vnetbench.backends.docker.image import shared_libraries
    from vnetbench.backends.kubernetes.image import node_image
    from vnetbench.workloads.mpi.bench import find_mpi_bench
    try:
        image = node_image()
    except Exception as exc:  # no probe or busybox on this machine
        pytest.skip(str(exc))
    if "mpi" not in image.workloads:
        pytest.skip("OpenMPI, vnb-mpi-bench or kubectl is not on this machine")
    with tarfile.open(fileobj=io.BytesIO(image.layer)) as layer:
        members = {m.name: m for m in layer.getmembers()}
    assert members["usr/local/bin/vnb-kube-rsh"].mode == 0o755
    assert {"usr/local/bin/vnb-mpi-bench", "usr/local/bin/kubectl", "usr/bin/mpirun",
            "usr/bin/orted"} <= set(members)
    assert image.programs[str(find_mpi_bench())] == "/usr/local/bin/vnb-mpi-bench"
    # a component mpirun loads with dlopen, and the libraries ldd names for it
    (btl_tcp,) = [n for n in members if n.endswith("/mca_btl_tcp.so")]
    libs = subprocess.run(["ldd", "/" + btl_tcp], capture_output=True, text=True).stdout
    assert all(lib.lstrip("/") in members for lib in shared_libraries(libs))


def test_clean_leaves_a_namespace_of_another_machine_with_the_same_hostname(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two machines named alike both run vnetbench against one cluster: the hostname label
    is the same, the machine label (a hash of /etc/machine-id) is not, and ``clean
    --kubernetes`` deletes only this machine's dead runs."""
    from vnetbench.backends.kubernetes import cleanup, manifests

    me, machine = manifests.host_label(), manifests.machine_label()
    if not machine:
        pytest.skip("this machine has no /etc/machine-id")

    def ns(run: str, **labels: str) -> dict[str, object]:
        return {"metadata": {"name": f"vnb{run}", "labels": {
            manifests.MANAGED_BY: "vnetbench", manifests.RUN: run, manifests.HOST: me,
            **labels}}}

    class Listed:
        cluster = "test"

        def __init__(self, *_args: object) -> None:
            pass

        def objects(self, _argv: list[str]) -> dict[str, object]:
            return {"items": [ns("aaaa", **{manifests.MACHINE: machine}),
                              ns("bbbb", **{manifests.MACHINE: "0123456789abcdef"}),
                              ns("cccc")]}

    deleted: list[str] = []
    monkeypatch.setattr(cleanup, "find_kubectl", lambda: "kubectl")
    monkeypatch.setattr(cleanup, "Kubectl", Listed)
    monkeypatch.setattr(cleanup, "live_runs", set)
    monkeypatch.setattr(cleanup, "delete_namespace",
                        lambda _k, name, _run: deleted.append(name) or True)
    done = cleanup.clean_cluster("ctx")
    assert deleted == ["vnbaaaa", "vnbcccc"]  # an unmarked one: by its hostname, as before
    assert any("left namespace vnbbbbb" in line and "another machine" in line for line in done)
    assert manifests.PodSpec("ab12", "img", "Never", "box").labels("node")[
        manifests.MACHINE] == machine


def test_the_pod_images_workloads_come_from_their_registry_lines() -> None:
    """What the image carries for a workload is said once, on the workload's registry line;
    a workload that launches programs in the other nodes (MPI) gets the launcher's too."""
    from vnetbench.backends.kubernetes.image import KUBE_RSH, workload_programs
    from vnetbench.workloads.registry import pod_needs

    table = {w.workload: w for w in workload_programs()}
    assert set(table) == set(pod_needs()) >= {"oltp", "mpi", "iperf3", "sockperf"}
    assert "hadoop" not in table and "rr" not in table
    assert table["oltp"].programs == pod_needs()["oltp"].programs and not table["oltp"].scripts
    assert [text for _, text in table["mpi"].scripts] == [KUBE_RSH]
    assert any(inside.endswith("/kubectl") for inside, _ in table["mpi"].located)
    assert any(inside.endswith("/vnb-mpi-bench") for inside, _ in table["mpi"].located)
