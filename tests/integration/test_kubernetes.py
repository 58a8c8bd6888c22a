"""The kubernetes backend end to end, on a real local cluster (``k8s_cluster.py``: Kubernetes
v1.34.4 on two emulated machines, routed CNI; the flannel VXLAN setup in its own test):
``vnetbench run`` measures rr, crr and stream on k8s-hostnetwork, k8s-pod and k8s-service,
on one node and across two, and a hostNetwork client to a pod server; records the CNI, its
mode, MTU, encapsulation and the kube-proxy mode; and leaves the cluster (namespaces, pods,
services, images) and the nodes (links, routes, firewall, sysctls) as they were, after
success, Ctrl-C, SIGTERM, and SIGKILL followed by ``vnetbench clean --kubernetes``. Bad
input (an unreachable cluster, missing permissions, an unknown node, vnetbench's image
missing on the nodes) is refused in one line with nothing created; the ClusterRole of
docs/kubernetes.md is enough to run."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..conftest import lab_leftovers, signals_at_default
from .k8s_cluster import LocalCluster, local_cluster, missing_parts

pytestmark = [pytest.mark.root, pytest.mark.heavy]

LAYERS = ["k8s-hostnetwork", "k8s-pod", "k8s-service"]
QUICK = {"duration": "0.5s", "warmup": "0s"}
WORKLOADS: list[Any] = [{"rr": QUICK}, {"crr": QUICK}, {"stream": QUICK}]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "kubernetes.md"
SETTLE_S = 30.0
"""How long the nodes may take to look as before once a run ended (kube-proxy's next sync)."""


def node_image_archive(directory: Path) -> Path:
    from vnetbench.backends.kubernetes.image import node_image
    path = directory / "node-image.tar"
    path.write_bytes(node_image().archive())
    return path


def warm_up(c: LocalCluster) -> None:
    """Run a pod on each node once, so what the CNI makes for the first pod and keeps (the
    cni0 bridge and its route) is there before the runs, as on any working cluster."""
    from vnetbench.backends.kubernetes.image import node_image
    pods = []
    for name in c.node_names:
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"warm-{name}", "namespace": "default"},
                     "spec": {"nodeName": name, "terminationGracePeriodSeconds": 0,
                              "restartPolicy": "Never",
                              "containers": [{"name": "c", "image": node_image().name,
                                              "imagePullPolicy": "Never",
                                              "command": ["/bin/true"]}]}})
    c.kubectl("create", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List",
                                                           "items": pods}))
    c.kubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "--timeout=120s",
              *[f"pod/warm-{n}" for n in c.node_names])
    c.kubectl("delete", "pod", "--wait=true", *[f"warm-{n}" for n in c.node_names])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    missing = missing_parts("routed")
    if missing:
        pytest.skip(f"no local Kubernetes: {', '.join(missing)} (scripts/setup.d/60-kubernetes.sh)")
    image = node_image_archive(tmp_path_factory.mktemp("k8s-image"))
    with local_cluster(2, "routed", [image]) as c:
        print(f"local cluster (routed) up in {c.timings['total_s']:.1f} s: {c.timings}")
        warm_up(c)
        yield c


@pytest.fixture(scope="module")
def limited(cluster: LocalCluster) -> Iterator[Path]:
    """A kubeconfig of a user bound to docs/kubernetes.md's ClusterRole and nothing more."""
    c = cluster
    role = yaml.safe_load(re.search(r"```yaml\n(apiVersion: rbac[^`]*)```", DOCS.read_text(),
                                    re.S)[1])
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "vnbt-limited"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": role["metadata"]["name"]},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                             "name": "vnbt-limited"}]}
    kubeconfig = c.user_kubeconfig("vnbt-limited")
    c.kubectl("create", "-f", "-", input_text=json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": [role, binding]}))
    try:
        yield kubeconfig
    finally:
        c.kubectl("delete", "clusterrolebinding", "vnbt-limited")
        c.kubectl("delete", "clusterrole", role["metadata"]["name"])


def scenario(tmp: Path, c: LocalCluster, layers: list[str], workloads: list[Any],
             hosts: Any = 2, kubeconfig: Path | None = None, **options: Any) -> Path:
    cluster = {"kubeconfig": str(kubeconfig or c.kubeconfig), "context": c.context,
               "nodes": c.node_names, **options}
    path = tmp / "kubernetes.yaml"
    path.write_text(yaml.safe_dump({"name": "k8s", "hosts": hosts, "nodes": 2,
                                    "layers": [{layer: cluster} for layer in layers],
                                    "workloads": workloads, "noise_floor": False}))
    return path


def vnetbench(*args: str, timeout: float = 900.0,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vnetbench", *args], capture_output=True,
                          text=True, timeout=timeout, check=False,
                          env={**os.environ, **(env or {})})


def settled(c: LocalCluster, before: dict[str, Any]) -> dict[str, Any]:
    """The cluster's state once it equals ``before`` (or after ``SETTLE_S``, as it is)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        now = c.state()
        if now == before or time.monotonic() > deadline:
            return now
        time.sleep(0.5)


def same(after: dict[str, Any], before: dict[str, Any]) -> bool:
    """Whether the states are equal; prints what differs when not."""
    if after == before:
        return True
    import difflib
    a = json.dumps(before, indent=1, sort_keys=True).replace("\\n", "\n").splitlines()
    b = json.dumps(after, indent=1, sort_keys=True).replace("\\n", "\n").splitlines()
    print("\n".join(difflib.unified_diff(a, b, "before", "after", lineterm="", n=1)))
    return False


def samples_of(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def kubernetes_facts(out: Path) -> dict[str, dict[str, Any]]:
    meta = json.loads((out / "run.json").read_text())
    return {layer: f["kubernetes"] for layer, f in meta["environment"]["layers"].items()}


def test_paths_same_node_and_cross_node(tmp_path: Path, cluster: LocalCluster,
                                       limited: Path) -> None:
    """Every layer, on one node and across two, as a user with only the documented
    ClusterRole (docs/kubernetes.md: it is enough to run, evidence pods included)."""
    c = cluster
    before, images = c.state(), c.images()
    out = tmp_path / "out"
    t0 = time.monotonic()
    got = vnetbench("run", str(scenario(tmp_path, c, LAYERS,
                                        [*WORKLOADS, {"rr": {**QUICK, "client": "host"}}],
                                        hosts=[1, 2], kubeconfig=limited)), "--out", str(out))
    print(f"6 trials in {time.monotonic() - t0:.0f} s")
    assert got.returncode == 0, got.stderr[-3000:]
    samples = samples_of(out)
    main = [s for s in samples if "k8s_node" not in s["labels"]]
    for layer in LAYERS:
        for hosts in ("1", "2"):
            mine = [s for s in main if s["labels"]["layer"] == layer
                    and s["labels"]["hosts"] == hosts]
            tps = {(s["labels"]["workload"], s["labels"]["client"]): s["value"] for s in mine
                   if s["metric"] == "tps"}
            assert set(tps) == {("rr", "n1"), ("crr", "n1"), ("rr", f"h{int(hosts) - 1}")}, tps
            assert min(tps.values()) > 100, (layer, hosts, tps)
            goodput = [s["value"] for s in mine if s["metric"] == "goodput_bps"]
            assert goodput and min(goodput) > 1e6, (layer, hosts, goodput)
    # evidence from every Kubernetes node the pods were on, labelled with it
    cross = [s for s in samples if s["labels"].get("hosts") == "2" and "k8s_node" in s["labels"]]
    assert {s["labels"]["k8s_node"] for s in cross} == set(c.node_names)
    busy = [s for s in cross if s["metric"] == "cpu_busy_s" and s["labels"]["workload"] == "stream"]
    assert busy and all(s["value"] > 0 for s in busy)
    pods_cpu = [s for s in cross if s["metric"] == "cgroup_cpu_s"]  # each pod's own cgroup
    assert {s["labels"]["cgroup"] for s in pods_cpu} == {"n0", "n1"}
    assert all(s["value"] > 0 for s in pods_cpu if s["labels"]["workload"] == "stream")
    pod_rx = [s for s in cross if s["metric"] == "rx_bytes" and s["labels"]["layer"] == "k8s-pod"
              and s["labels"].get("device") == "eth1" and s["labels"]["workload"] == "stream"]
    assert pod_rx and max(s["value"] for s in pod_rx) > 1e6  # the stream crossed the uplink
    facts = kubernetes_facts(out)
    for layer, f in facts.items():
        assert (f["cni"], f["mode"], f["encapsulation"], f["kube_proxy"]) == (
            "bridge", "routed", "none", "iptables"), (layer, f)
        assert f["mtu"] == 1500 and f["node_mtu"] == 1500
        assert f["server_version"] == "v1.34.4" and set(f["nodes"]) <= set(c.node_names)
    # nothing of the runs is left: namespaces, pods, services, images, links, routes, rules
    # on the nodes; and nothing was ever made on this machine
    ids = {f["namespace"] for f in facts.values()}
    here = subprocess.run(["sh", "-c", "ip netns list; ip -o link; iptables-save"],
                          capture_output=True, text=True).stdout
    assert not any(i in here for i in ids), ids
    assert same(settled(c, before), before)
    assert c.images() == images


IMAGE_WORKLOADS = ("oltp", "iperf3", "sockperf", "mpi")


def test_every_other_workload_on_pods(tmp_path: Path, cluster: LocalCluster) -> None:
    """In one run (one trial a path, so the suite stays short), on the CNI's path across two
    nodes, through a Service and on the nodes' own stacks: oltp (MariaDB in one pod,
    sysbench in another), iperf3 and sockperf (carried by the image), gaps and barrier (the
    probe), a user's command (busybox's nc), and mpi (mpirun in pod n0 starting the other
    pod's daemon with kubectl exec, as the launcher's service account); nothing of the run
    is left, the launcher's account and role included."""
    c = cluster
    from vnetbench.backends.kubernetes.image import node_image
    missing = set(IMAGE_WORKLOADS) - set(node_image().workloads)
    if missing:
        pytest.skip(f"the programs of {', '.join(sorted(missing))} are not on this machine, "
                    "so not in the pod image (scripts/setup.sh --with apps installs them)")
    before, images = c.state(), c.images()
    out = tmp_path / "out"
    workloads = [
        {"oltp": {"duration": "2s", "warmup": 0, "tables": 1, "table_size": 1000, "threads": 2}},
        {"iperf3": {"duration": "1s"}}, {"sockperf": {"duration": "1s"}},
        {"gaps": {"duration": "1s", "rate": 500}}, {"barrier": {"rounds": 200}},
        {"command": {"name": "nc", "server": ["nc", "-l", "-p", "{port}"],
                     "client": ["sh", "-c", "echo hello | nc -w 2 {addr} {port}"],
                     "ports": [7100], "metrics": "exit", "timeout": "20s"}},
        {"mpi": {"test": "pingpong", "iterations": 300}},
        {"mpi": {"test": "barrier", "iterations": 100}}]
    got = vnetbench("run", str(scenario(tmp_path, c, LAYERS, workloads)), "--out", str(out))
    assert got.returncode == 0, got.stderr[-3000:]
    main = [s for s in samples_of(out) if "k8s_node" not in s["labels"]
            and "cgroup" not in s["labels"]]
    for layer in LAYERS:
        mine = {(s["labels"].get("workload"), s["labels"].get("test"), s["metric"]): s["value"]
                for s in main if s["labels"].get("layer") == layer}
        assert mine[("oltp", None, "tps")] > 50, (layer, mine)
        assert mine[("iperf3", None, "goodput_bps")] > 1e6, (layer, mine)
        for wanted in (("sockperf", None, "rtt_p50_us"), ("gaps", None, "recv_gap_p50_us"),
                       ("barrier", None, "sync_p50_us"), ("mpi", "pingpong", "rtt_p50_us"),
                       ("mpi", "barrier", "sync_p50_us")):
            assert 0 < mine[wanted] < 10_000, (layer, wanted, mine.get(wanted))
        assert any(w == "command" for w, _, _ in mine), (layer, sorted(mine))
    ids = {f["namespace"] for f in kubernetes_facts(out).values()}
    here = subprocess.run(["sh", "-c", "ip netns list; ip -o link; iptables-save"],
                          capture_output=True, text=True).stdout
    assert not any(i in here for i in ids), ids
    left = c.kubectl("get", "serviceaccounts,roles,rolebindings", "-A", "--no-headers")
    assert not any(i in left for i in ids), left
    assert same(settled(c, before), before)
    assert c.images() == images


SIGNALS = {"interrupt": signal.SIGINT, "terminate": signal.SIGTERM, "kill": signal.SIGKILL}
CLIENT = re.compile(r"exec -n (vnb\w+) \1-n1 -c node -- /usr/local/bin/vnetbench-probe rr ")
"""The command line of a trial's rr client (kubectl exec into its namespace's pod n1)."""


def kubectl_execs() -> dict[int, str]:
    """This box's ``kubectl exec`` processes into a run's namespace: pid -> command line."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            if len(argv) > 2 and argv[0].endswith("kubectl") and " exec " in " ".join(argv):
                found[int(entry.name)] = " ".join(argv)
    return found


def measuring(pids: dict[str, int]) -> dict[str, str]:
    """Of the runs (name -> process id), those whose rr client runs: name -> its namespace."""
    parents: dict[int, str] = {}
    for pid, line in kubectl_execs().items():
        if (m := CLIENT.search(line)) is not None:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            parents[int(stat.rsplit(")", 1)[1].split()[1])] = m[1]
    return {name: parents[pid] for name, pid in pids.items() if pid in parents}


def test_stopped_runs_leave_nothing(tmp_path: Path, cluster: LocalCluster) -> None:
    """Three runs at once, each stopped while it measures: Ctrl-C and SIGTERM (the run
    removes everything itself), SIGKILL (``vnetbench clean --kubernetes`` does)."""
    c = cluster
    before = c.state()
    procs: dict[str, subprocess.Popen[str]] = {}
    try:
        for how in SIGNALS:
            (tmp_path / how).mkdir()
            path = scenario(tmp_path / how, c, ["k8s-service"], [{"rr": {"duration": "60s"}}])
            procs[how] = subprocess.Popen(
                [sys.executable, "-m", "vnetbench", "run", str(path), "--out",
                 str(tmp_path / how / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, preexec_fn=signals_at_default)
        deadline = time.monotonic() + 120
        while True:  # wait until every trial measures (its pods run and its client runs)
            namespaces = measuring({how: proc.pid for how, proc in procs.items()})
            if len(namespaces) == len(procs):
                break
            for how, proc in procs.items():
                assert proc.poll() is None, (how, proc.communicate()[1][-2000:])
            assert time.monotonic() < deadline, f"never got to measure: {set(procs) - set(namespaces)}"
            time.sleep(0.5)
        for how, proc in procs.items():
            proc.send_signal(SIGNALS[how])
        err = {how: proc.communicate(timeout=240)[1] for how, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for how in ("interrupt", "terminate"):
        assert procs[how].returncode != 0 and "Traceback" not in err[how], (how, err[how][-2000:])
        # nothing of it left here either: no kubectl into its namespace, no file, no object
        ns = namespaces[how]
        assert not [line for line in kubectl_execs().values() if f" -n {ns} " in line], how
        assert not [x for x in lab_leftovers() if ns in x], how
    left = c.kubectl("get", "namespaces", "-l", "app.kubernetes.io/managed-by=vnetbench",
                     "-o", "name").split()
    assert left == [f"namespace/{namespaces['kill']}"], left  # a killed run cannot clean up
    got = vnetbench("clean", "--kubernetes", c.context, "--kubeconfig", str(c.kubeconfig))
    assert got.returncode == 0, got.stderr
    assert f"deleted namespace {namespaces['kill']}" in got.stdout, got.stdout
    again = vnetbench("clean", "--kubernetes", c.context, "--kubeconfig", str(c.kubeconfig))
    assert again.stdout.strip() == f"nothing to clean in {c.context}", again.stdout
    vnetbench("clean")  # this box's part (state file, work directory, kubectl processes)
    assert same(settled(c, before), before)


def refused(tmp_path: Path, c: LocalCluster, layers: list[str], hosts: int = 2,
            env: dict[str, str] | None = None, **options: Any) -> str:
    """The one line of a refused run (exit 2), after checking nothing was created."""
    before = c.state()
    out = tmp_path / "out"
    got = vnetbench("run", str(scenario(tmp_path, c, layers, [{"rr": QUICK}], hosts=hosts,
                                        **options)), "--out", str(out), env=env)
    assert got.returncode == 2, (got.returncode, got.stderr[-2000:])
    lines = [line for line in got.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("vnetbench: error: "), got.stderr
    assert not out.exists() or not any(out.iterdir())
    assert c.state() == before
    return lines[0]


def test_bad_input_is_refused_in_one_line(tmp_path: Path, cluster: LocalCluster) -> None:
    c = cluster
    line = refused(tmp_path, c, ["k8s-pod"], nodes=[c.node_names[0], "no-such-node"])
    assert "no node no-such-node in the cluster" in line
    line = refused(tmp_path, c, ["k8s-pod"], nodes=[c.node_names[0]])
    assert "2 host(s) asked for, 1 Kubernetes node(s) named" in line
    # a cluster that does not answer: the same kubeconfig aimed at an address nobody has
    dead = tmp_path / "dead.kubeconfig"
    config = json.loads(c.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://{c.net}.99:6443"
    dead.write_text(json.dumps(config))
    line = refused(tmp_path, c, ["k8s-pod"], kubeconfig=str(dead))
    assert "cannot reach the Kubernetes cluster of context vnbt-local" in line
    got = vnetbench("clean", "--kubernetes", c.context, "--kubeconfig", str(dead))
    assert got.returncode == 1 and got.stdout == "", got
    assert got.stderr.startswith(f"vnetbench: cluster of context {c.context} not cleaned: ")
    assert len(got.stderr.splitlines()) == 1, got.stderr
    # a user without permissions: every one vnetbench needs is named
    nobody = c.user_kubeconfig("vnbt-nobody")
    line = refused(tmp_path, c, ["k8s-service"], kubeconfig=str(nobody))
    for needed in ("create namespaces", "create pods", "create pods/exec", "list nodes",
                   "create services"):
        assert needed in line, line
    assert "docs/kubernetes.md" in line
    # vnetbench's own image, missing on the nodes (another probe makes another image)
    other = tmp_path / "vnetbench-probe"
    from vnetbench.host.binaries import find_binary
    shutil.copyfile(find_binary("vnetbench-probe"), other)
    with other.open("ab") as f:
        f.write(b"\0other")
    other.chmod(0o755)
    line = refused(tmp_path, c, ["k8s-pod"], env={"VNETBENCH_PROBE": str(other)})
    assert re.search(r"node \S+, \S+ does not have vnetbench's image localhost/vnetbench/node:",
                     line), line
    assert "ctr -n k8s.io images import" in line


def test_an_image_the_nodes_cannot_pull_fails_the_trial_at_once(tmp_path: Path,
                                                                 cluster: LocalCluster) -> None:
    c = cluster
    before = c.state()
    out = tmp_path / "out"
    t0 = time.monotonic()
    got = vnetbench("run", str(scenario(tmp_path, c, ["k8s-pod"], [{"rr": QUICK}],
                                        image="localhost:1/vnetbench/absent:1")),
                    "--out", str(out))
    assert time.monotonic() - t0 < 90  # not the 120 s ready timeout
    assert got.returncode != 0
    assert re.search(r"trial 0 failed at build: pod vnb\w+-\w+ on \S+: (ErrImagePull|"
                     r"ImagePullBackOff): ", got.stderr), got.stderr[-2000:]
    assert same(settled(c, before), before)


def test_flannel_vxlan(tmp_path: Path) -> None:
    missing = missing_parts("flannel")
    if missing:
        pytest.skip(f"no local Kubernetes with flannel: {', '.join(missing)}")
    image = node_image_archive(tmp_path)
    with local_cluster(2, "flannel", [image]) as c:
        print(f"local cluster (flannel) up in {c.timings['total_s']:.1f} s: {c.timings}")
        warm_up(c)
        before, images = c.state(), c.images()
        out = tmp_path / "out"
        got = vnetbench("run", str(scenario(tmp_path, c, ["k8s-pod"], WORKLOADS, hosts=[1, 2])),
                        "--out", str(out))
        assert got.returncode == 0, got.stderr[-3000:]
        main = [s for s in samples_of(out) if "k8s_node" not in s["labels"]]
        for hosts in ("1", "2"):
            tps = {s["labels"]["workload"]: s["value"] for s in main
                   if s["labels"]["hosts"] == hosts and s["metric"] == "tps"}
            assert set(tps) == {"rr", "crr"} and min(tps.values()) > 100, (hosts, tps)
            assert any(s["metric"] == "goodput_bps" and s["value"] > 1e6 for s in main
                       if s["labels"]["hosts"] == hosts)
        f = kubernetes_facts(out)["k8s-pod"]
        assert (f["cni"], f["mode"], f["encapsulation"], f["kube_proxy"]) == (
            "flannel", "vxlan", "vxlan", "iptables"), f
        assert f["mtu"] == 1450 and f["node_mtu"] == 1500
        assert f["tunnel_devices"] == {"flannel.1": "vxlan"}
        assert same(settled(c, before), before)
        assert c.images() == images
