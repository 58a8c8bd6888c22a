"""A real Kubernetes cluster on this box for the kubernetes backend's tests: 2-3 nodes, each an
emulated machine, with the binaries scripts/setup.d/60-kubernetes.sh builds (v1.34.4 from the
Go module proxy) and Debian's etcd, containerd, runc and CNI plugins. No API is faked.

Machines. Each is a network namespace ``vnbt<hex>-m<i>`` (underlay ``eth1`` on a TEST-NET /24
at ``.10 + i``, a switch namespace joining them and this box's ``vnbt<hex>c`` at ``.254``, as
in ``machines.py``) plus a mount namespace of its own, held by a ``sleep`` "init", where:
``/run``, ``/tmp`` and ``/var/log`` are private tmpfs; ``/etc`` and ``/var/lib`` are overlays
whose writes land in the machine's directory (so ``/etc/cni/net.d`` and ``/var/lib/cni`` are
the machine's own, at their usual paths, and this box's files never change); ``/sys`` is the
machine's sysfs with this box's cgroup hierarchies; and the six kernel settings kubelet insists
on (``vm.overcommit_memory``...) are files bound over their ``/proc/sys`` entries, so kubelet
finds them as it wants them and never writes this box's. Every daemon is started by PID with
``nsenter`` into both namespaces.

Cluster. Machine 0 holds the control plane: etcd (data on its tmpfs), kube-apiserver (6443, its
certificates made here with openssl: one CA, a serving certificate, a client certificate per
component and per kubelet), kube-controller-manager (allocates each node a /24 of 10.244.0.0/16)
and kube-scheduler. Every machine runs containerd (its own root in the machine's directory,
cgroupfs, the locally built pause image as sandbox image, ``restrict_oom_score_adj``: this
box's root lacks CAP_SYS_RESOURCE, so runc may not lower a sandbox's OOM score to kubelet's
-998), kubelet (cgroup root
``/vnbt<hex>-m<i>``) and kube-proxy (iptables mode); the images given are imported into each
node's containerd (``ctr images import``) before kubelet starts. kube-proxy and flanneld run as
processes of the machine rather than as DaemonSet pods: their data path is the same.

CNI setups (``cni``):
- ``routed``: the bridge and host-local plugins on each node's podCIDR (cni0, gateway .1), and
  a route on each machine to every other node's podCIDR via that node (host-gw / Calico
  without encapsulation);
- ``flannel``: flanneld (``--kube-subnet-mgr``, VXLAN backend) on each machine makes
  ``flannel.1`` and its routes and writes ``/run/flannel/subnet.env``; the node's CNI
  configuration is the bridge plugin on that subnet with flannel's MTU (what flannel's own CNI
  plugin, which the Go proxy does not serve, would delegate).

Teardown (every exit path): processes by PID (every process in a machine's namespaces: the
daemons, containerd's shims, the pods' processes), the cgroups under ``/vnbt<hex>-m<i>``, the
namespaces, the veth, the files. The set-up times (certificates, control plane, nodes, CNI)
are recorded in ``LocalCluster.timings``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from .machines import _kill_all, _machine_pids, free_test_net, strip_iptables

K8S_CACHE = Path("/var/cache/vnetbench/kubernetes-v1.34.4")
K8S_BIN = K8S_CACHE / "bin"
PAUSE_ARCHIVE = K8S_CACHE / "images" / "pause.tar"
CNI_BIN = "/usr/lib/cni"
ETCD = "/usr/bin/etcd"
CONTAINERD = "/usr/bin/containerd"
CTR = "/usr/bin/ctr"
POD_CIDR = "10.244.0.0/16"
SERVICE_CIDR = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"
CLUSTER_NAME = "vnbt-local"
KUBELET_SYSCTLS = {"vm/overcommit_memory": "1", "vm/panic_on_oom": "0", "kernel/panic": "10",
                   "kernel/panic_on_oops": "1", "kernel/keys/root_maxkeys": "1000000",
                   "kernel/keys/root_maxbytes": "25000000"}
"""What kubelet's container manager wants (``setupKernelTunables``), bound over /proc/sys."""
NEEDED = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet",
          "kube-proxy", "kubectl")
STATE_SYSCTLS = ("net.ipv4.ip_forward", "net.bridge.bridge-nf-call-iptables")
ARP_RETRANS_MS = 200
"""ARP retransmit time of this box's link to the switch (the kernel's: 1000): a connection to
an address no machine has fails after 3 unanswered requests, 0.6 s instead of 3 s."""


def missing_parts(cni: str = "routed") -> list[str]:
    """What this box lacks for a local cluster (empty: it can run one)."""
    out = [str(K8S_BIN / b) for b in NEEDED if not (K8S_BIN / b).is_file()]
    out += [p for p in (ETCD, CONTAINERD, CTR, "/usr/sbin/runc", f"{CNI_BIN}/bridge",
                        str(PAUSE_ARCHIVE)) if not Path(p).exists()]
    if cni == "flannel" and not (K8S_BIN / "flanneld").is_file():
        out.append(str(K8S_BIN / "flanneld"))
    return out


def _run(argv: Sequence[str], *, check: bool = True, input_text: str | None = None,
         timeout: float = 60) -> str:
    proc = subprocess.run(list(argv), input=input_text, capture_output=True, text=True,
                          timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` exited {proc.returncode}: {proc.stderr.strip()[-800:]}")
    return proc.stdout


# ---- certificates ------------------------------------------------------------------------
class Pki:
    """A CA and the certificates the cluster's parts present (EC P-256, two days)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        directory.mkdir(parents=True)
        self.ca_key, self.ca = directory / "ca.key", directory / "ca.crt"
        _run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
              "-nodes", "-keyout", str(self.ca_key), "-out", str(self.ca), "-days", "2",
              "-subj", "/CN=vnbt-ca", "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        self.sa_key, self.sa_pub = directory / "sa.key", directory / "sa.pub"
        _run(["openssl", "genrsa", "-out", str(self.sa_key), "2048"])
        _run(["openssl", "rsa", "-in", str(self.sa_key), "-pubout", "-out", str(self.sa_pub)])

    def issue(self, name: str, subject: str, sans: Sequence[str] = (),
              server: bool = False) -> tuple[Path, Path]:
        key, csr, crt = self.dir / f"{name}.key", self.dir / f"{name}.csr", self.dir / f"{name}.crt"
        ext = self.dir / f"{name}.ext"
        lines = ["basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment",
                 f"extendedKeyUsage={'serverAuth,clientAuth' if server else 'clientAuth'}"]
        if sans:
            lines.append("subjectAltName=" + ",".join(sans))
        ext.write_text("\n".join(lines) + "\n")
        _run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
              "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", subject])
        _run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(self.ca), "-CAkey",
              str(self.ca_key), "-set_serial", str(int.from_bytes(secrets.token_bytes(8), "big")),
              "-days", "2", "-extfile", str(ext), "-out", str(crt)])
        return crt, key

    def kubeconfig(self, path: Path, user: str, server: str, crt: Path, key: Path,
                   context: str = CLUSTER_NAME) -> Path:
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": context,
            "clusters": [{"name": CLUSTER_NAME, "cluster": {
                "server": server, "certificate-authority": str(self.ca)}}],
            "users": [{"name": user, "user": {"client-certificate": str(crt),
                                              "client-key": str(key)}}],
            "contexts": [{"name": context, "context": {"cluster": CLUSTER_NAME, "user": user}}],
        }, indent=1))
        return path


# ---- machines ----------------------------------------------------------------------------
INIT_SCRIPT = """\
set -e
d=$1
mount -t tmpfs -o mode=0755,size=256m vnbt /run
mkdir /run/cg
mount --rbind /sys/fs/cgroup /run/cg
mount -t sysfs sysfs /sys
mount --move /run/cg /sys/fs/cgroup
rmdir /run/cg
mount -t tmpfs -o mode=1777 vnbt /tmp
mount -t tmpfs -o mode=0755 vnbt /var/log
for t in etc var/lib; do
  n=$(echo "$t" | tr / _)
  mkdir -p "$d/ovl/$n/upper" "$d/ovl/$n/work"
  mount -t overlay vnbt -o "lowerdir=/$t,upperdir=$d/ovl/$n/upper,workdir=$d/ovl/$n/work" "/$t"
done
for f in "$d"/sysctl/*; do
  mount --bind "$f" "/proc/sys/$(basename "$f" | tr @ /)"
done
mkdir -p /run/netns /etc/cni/net.d /var/lib/cni /run/flannel
echo ready
exec sleep infinity
"""
"""The machine's init (argv: the machine's directory); see the module docstring."""


@dataclass
class K8sMachine:
    index: int
    name: str
    """Its Kubernetes node name."""
    netns: str
    address: str
    dir: Path
    init: subprocess.Popen[bytes] | None = None
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    pod_cidr: str = ""

    def enter(self) -> list[str]:
        assert self.init is not None
        return ["nsenter", "-t", str(self.init.pid), "-m", "-n"]

    def run(self, argv: Sequence[str], check: bool = True, timeout: float = 60) -> str:
        return _run([*self.enter(), *argv], check=check, timeout=timeout)

    def start(self, role: str, argv: Sequence[str], env: dict[str, str] | None = None) -> None:
        log = self.dir / f"{role}.log"
        with log.open("ab") as out:
            self.procs[role] = subprocess.Popen(
                [*self.enter(), *argv], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                start_new_session=True, env={**os.environ, **(env or {})})

    def check_alive(self) -> None:
        for role, proc in self.procs.items():
            if proc.poll() is not None:
                tail = (self.dir / f"{role}.log").read_text(errors="replace")[-1500:]
                raise RuntimeError(f"{role} on {self.name} exited {proc.returncode}: {tail}")

    @property
    def cgroup(self) -> str:
        return f"/{self.netns}"

    def ctr(self, *args: str) -> list[str]:
        return [CTR, "--address", "/run/containerd/containerd.sock", "-n", "k8s.io", *args]


def _start_init(m: K8sMachine) -> None:
    sysctl_dir = m.dir / "sysctl"
    sysctl_dir.mkdir(parents=True)
    for key, value in KUBELET_SYSCTLS.items():
        (sysctl_dir / key.replace("/", "@")).write_text(value + "\n")
    m.init = subprocess.Popen(
        ["nsenter", f"--net=/run/netns/{m.netns}", "unshare", "--mount", "--propagation", "private",
         "sh", "-c", INIT_SCRIPT, "vnbt-init", str(m.dir)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True)
    assert m.init.stdout is not None
    if m.init.stdout.readline().decode().strip() != "ready":
        m.init.kill()
        _, err = m.init.communicate()
        raise RuntimeError(f"machine {m.netns} did not start: {err.decode().strip()}")


def _make_cgroup_root(m: K8sMachine) -> None:
    """kubelet's cgroup root in every hierarchy (it must exist; cpuset copied from the top)."""
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        if not hierarchy.is_dir():
            continue
        top = hierarchy / m.netns
        top.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (top / name).exists():
                (top / name).write_text((hierarchy / name).read_text())


def _remove_cgroups(m: K8sMachine) -> list[str]:
    problems = []
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        top = hierarchy / m.netns
        if not top.is_dir():
            continue
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with suppress(OSError):
                d.rmdir()
        try:
            top.rmdir()
        except OSError as exc:
            problems.append(f"cgroup {top}: {exc}")
    return problems


# ---- the cluster -------------------------------------------------------------------------
@dataclass
class LocalCluster:
    """What ``local_cluster`` made."""

    prefix: str
    net: str
    cni: str
    tmp: Path
    kubeconfig: Path
    _pki: Pki | None = None
    machines: list[K8sMachine] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def pki(self) -> Pki:
        assert self._pki is not None
        return self._pki

    @property
    def context(self) -> str:
        return CLUSTER_NAME

    @property
    def server(self) -> str:
        return f"https://{self.machines[0].address}:6443"

    @property
    def node_names(self) -> list[str]:
        return [m.name for m in self.machines]

    def kubectl(self, *args: str, check: bool = True, input_text: str | None = None,
                kubeconfig: Path | None = None) -> str:
        return _run([str(K8S_BIN / "kubectl"), "--kubeconfig", str(kubeconfig or self.kubeconfig),
                     *args], check=check, input_text=input_text)

    def user_kubeconfig(self, user: str) -> Path:
        """A kubeconfig of a user with no permissions of its own (RBAC decides)."""
        crt, key = self.pki.issue(f"user-{user}", f"/CN={user}")
        return self.pki.kubeconfig(self.tmp / f"{user}.kubeconfig", user, self.server, crt, key)

    def import_image(self, archive: Path) -> None:
        """Load an image archive into every node's containerd (``ctr images import``)."""
        for m in self.machines:
            m.run(m.ctr("images", "import", str(_visible(self, archive))), timeout=120)

    def images(self) -> list[list[str]]:
        """Every node's images (names), sorted."""
        return [sorted(m.run(m.ctr("images", "list", "-q")).split()) for m in self.machines]

    def state(self) -> dict[str, Any]:
        """What a run could change on the nodes (links, routes, firewall, sysctls) and in the
        cluster (namespaces, pods, services)."""
        nodes = []
        for m in self.machines:
            nodes.append({
                "links": sorted(line.split(":")[1].strip().split("@")[0]
                                for line in m.run(["ip", "-o", "link"]).splitlines()),
                # without the carrier flag: cni0 has none while no pod is on the node
                "routes": m.run(["ip", "-4", "route", "show", "table", "all"]).replace(
                    " linkdown", ""),
                "iptables": _stable_iptables(m.run(["iptables-save"], check=False)),
                "sysctls": m.run(["sysctl", "-e", *STATE_SYSCTLS], check=False),
            })
        objects = json.loads(self.kubectl("get", "namespaces,pods,services", "-A", "-o", "json"))
        names = sorted(f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}"
                       for o in objects["items"])
        return {"nodes": nodes, "objects": names}

    def check_alive(self) -> None:
        for m in self.machines:
            m.check_alive()


def _visible(c: LocalCluster, archive: Path) -> Path:
    """``archive`` where the machines see it (their /tmp is their own): copied into the
    cluster's directory unless it is there or in the cache."""
    if archive.is_relative_to(c.tmp) or archive.is_relative_to(K8S_CACHE):
        return archive
    copy = c.tmp / "images" / archive.name
    copy.parent.mkdir(exist_ok=True)
    shutil.copyfile(archive, copy)
    return copy


def _stable_iptables(text: str) -> str:
    """``iptables-save`` without counters and comments, and without the chains kube-proxy
    rewrites with fresh hashes on every sync (their names and rules are kube-proxy's own)."""
    return strip_iptables(text)


def _network(c: LocalCluster) -> None:
    p = c.prefix
    sw = f"{p}-sw"
    cmds: list[list[str]] = [["ip", "netns", "add", sw],
                             ["ip", "-n", sw, "link", "add", f"{p}br", "type", "bridge"],
                             ["ip", "-n", sw, "link", "set", f"{p}br", "up"]]
    for m in c.machines:
        cmds += [
            ["ip", "netns", "add", m.netns],
            ["ip", "-n", sw, "link", "add", f"{p}m{m.index}", "type", "veth", "peer", "name",
             "eth1", "netns", m.netns],
            ["ip", "-n", sw, "link", "set", f"{p}m{m.index}", "master", f"{p}br", "up"],
            ["ip", "-n", m.netns, "link", "set", "lo", "up"],
            ["ip", "-n", m.netns, "addr", "add", f"{m.address}/24", "dev", "eth1"],
            ["ip", "-n", m.netns, "link", "set", "eth1", "up"],
            ["ip", "-n", m.netns, "route", "add", "default", "dev", "eth1"],
            ["ip", "netns", "exec", m.netns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1",
             "net.bridge.bridge-nf-call-iptables=1", "net.ipv4.conf.all.rp_filter=0",
             "net.ipv6.conf.all.disable_ipv6=1"],
        ]
    cmds += [["ip", "link", "add", f"{p}c", "type", "veth", "peer", "name", f"{p}cs", "netns", sw],
             ["ip", "-n", sw, "link", "set", f"{p}cs", "master", f"{p}br", "up"],
             # an address nobody on the switch has (a dead cluster) fails in 0.6 s, not 3 s
             ["sysctl", "-q", "-w", f"net.ipv4.neigh.{p}c.retrans_time_ms={ARP_RETRANS_MS}"],
             ["ip", "addr", "add", f"{c.net}.254/24", "dev", f"{p}c"],
             ["ip", "link", "set", f"{p}c", "up"]]
    for argv in cmds:
        _run(argv)


def _certificates(c: LocalCluster) -> dict[str, tuple[Path, Path]]:
    pki, m0 = c.pki, c.machines[0]
    certs = {
        "apiserver": pki.issue("apiserver", "/CN=kube-apiserver", server=True, sans=[
            f"IP:{m0.address}", f"IP:{SERVICE_IP}", "IP:127.0.0.1", "DNS:kubernetes",
            "DNS:kubernetes.default", "DNS:kubernetes.default.svc",
            "DNS:kubernetes.default.svc.cluster.local", "DNS:localhost"]),
        "apiserver-kubelet": pki.issue("apiserver-kubelet", "/O=system:masters/CN=kube-apiserver-kubelet-client"),
        "admin": pki.issue("admin", "/O=system:masters/CN=vnbt-admin"),
        "controller-manager": pki.issue("controller-manager", "/CN=system:kube-controller-manager"),
        "scheduler": pki.issue("scheduler", "/CN=system:kube-scheduler"),
        "kube-proxy": pki.issue("kube-proxy", "/CN=system:kube-proxy"),
        "flannel": pki.issue("flannel", "/O=system:masters/CN=flannel"),
    }
    for m in c.machines:
        certs[f"kubelet-{m.index}"] = pki.issue(f"kubelet-{m.index}",
                                                f"/O=system:nodes/CN=system:node:{m.name}")
    return certs


def _start_control_plane(c: LocalCluster, certs: dict[str, tuple[Path, Path]]) -> None:
    m0, pki, d = c.machines[0], c.pki, c.tmp
    m0.start("etcd", [ETCD, "--name", "m0", "--data-dir", "/run/etcd",
                      "--listen-client-urls", "http://127.0.0.1:2379",
                      "--advertise-client-urls", "http://127.0.0.1:2379",
                      "--listen-peer-urls", "http://127.0.0.1:2380",
                      "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
                      "--initial-cluster", "m0=http://127.0.0.1:2380",
                      "--log-level", "warn", "--logger", "zap"])
    crt, key = certs["apiserver"]
    kcrt, kkey = certs["apiserver-kubelet"]
    m0.start("kube-apiserver", [
        str(K8S_BIN / "kube-apiserver"), "--etcd-servers=http://127.0.0.1:2379",
        f"--advertise-address={m0.address}", "--bind-address=0.0.0.0", "--secure-port=6443",
        f"--service-cluster-ip-range={SERVICE_CIDR}", f"--client-ca-file={pki.ca}",
        f"--tls-cert-file={crt}", f"--tls-private-key-file={key}",
        f"--kubelet-client-certificate={kcrt}", f"--kubelet-client-key={kkey}",
        "--kubelet-preferred-address-types=InternalIP",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "--authorization-mode=Node,RBAC", "--allow-privileged=true",
        "--enable-admission-plugins=NodeRestriction", "--profiling=false", "--v=1"])
    _wait_readyz(c, timeout=180)
    server = "https://127.0.0.1:6443"
    cm = pki.kubeconfig(d / "controller-manager.kubeconfig", "system:kube-controller-manager",
                        server, *certs["controller-manager"])
    m0.start("kube-controller-manager", [
        str(K8S_BIN / "kube-controller-manager"), f"--kubeconfig={cm}",
        f"--authentication-kubeconfig={cm}", f"--authorization-kubeconfig={cm}",
        "--allocate-node-cidrs=true", f"--cluster-cidr={POD_CIDR}", "--node-cidr-mask-size=24",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--service-account-private-key-file={pki.sa_key}", f"--root-ca-file={pki.ca}",
        "--use-service-account-credentials=true", "--leader-elect=false",
        "--bind-address=127.0.0.1", "--v=1"])
    sched = pki.kubeconfig(d / "scheduler.kubeconfig", "system:kube-scheduler", server,
                           *certs["scheduler"])
    m0.start("kube-scheduler", [
        str(K8S_BIN / "kube-scheduler"), f"--kubeconfig={sched}",
        f"--authentication-kubeconfig={sched}", f"--authorization-kubeconfig={sched}",
        "--leader-elect=false", "--bind-address=127.0.0.1", "--v=1"])


def _wait_readyz(c: LocalCluster, timeout: float) -> None:
    admin_crt, admin_key = c.pki.dir / "admin.crt", c.pki.dir / "admin.key"
    ctx = ssl.create_default_context(cafile=str(c.pki.ca))
    ctx.load_cert_chain(str(admin_crt), str(admin_key))
    deadline = time.monotonic() + timeout
    while True:
        c.check_alive()
        with suppress(OSError), urllib.request.urlopen(f"{c.server}/readyz", context=ctx, timeout=5) as resp:
            if resp.status == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"kube-apiserver not ready after {timeout:.0f}s: "
                               f"{(c.machines[0].dir / 'kube-apiserver.log').read_text()[-1500:]}")
        time.sleep(0.5)


def _containerd_config(m: K8sMachine, pause: str) -> str:
    root = m.dir / "containerd"
    return f"""version = 2
root = "{root}/root"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "/run/containerd/containerd.sock"
[ttrpc]
  address = "/run/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{root}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  disable_apparmor = true
  restrict_oom_score_adj = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "/etc/cni/net.d"
"""


def _kubelet_config(c: LocalCluster, m: K8sMachine) -> str:
    return json.dumps({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "authentication": {"x509": {"clientCAFile": str(c.pki.ca)}, "webhook": {"enabled": True},
                           "anonymous": {"enabled": False}},
        "authorization": {"mode": "Webhook"},
        "address": m.address, "port": 10250, "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "cgroupDriver": "cgroupfs", "cgroupRoot": m.cgroup, "cgroupsPerQOS": True,
        "containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock",
        "failSwapOn": False, "failCgroupV1": False, "resolvConf": "",
        "evictionHard": {"memory.available": "50Mi", "nodefs.available": "1%",
                         "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False, "maxPods": 50, "registerNode": True,
        "nodeStatusMaxImages": 50, "podPidsLimit": -1, "protectKernelDefaults": False,
    })


def _start_node(c: LocalCluster, m: K8sMachine, certs: dict[str, tuple[Path, Path]],
                images: Sequence[Path], pause: str) -> None:
    (m.dir / "containerd").mkdir()
    config = m.dir / "containerd.toml"
    config.write_text(_containerd_config(m, pause))
    m.start("containerd", [CONTAINERD, "--config", str(config), "--log-level", "warn"])
    deadline = time.monotonic() + 60
    while m.run(m.ctr("version"), check=False, timeout=30) == "":
        m.check_alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"containerd on {m.name} does not answer")
        time.sleep(0.2)
    for archive in (PAUSE_ARCHIVE, *images):
        m.run(m.ctr("images", "import", str(_visible(c, archive))), timeout=120)
    _make_cgroup_root(m)
    server = c.server
    kubeconfig = c.pki.kubeconfig(m.dir / "kubelet.kubeconfig", f"system:node:{m.name}", server,
                                  *certs[f"kubelet-{m.index}"])
    kconf = m.dir / "kubelet.json"
    kconf.write_text(_kubelet_config(c, m))
    m.start("kubelet", [str(K8S_BIN / "kubelet"), f"--config={kconf}",
                        f"--kubeconfig={kubeconfig}", f"--hostname-override={m.name}",
                        f"--node-ip={m.address}", f"--root-dir={m.dir / 'kubelet'}", "--v=1"])
    proxy_kc = c.pki.kubeconfig(m.dir / "kube-proxy.kubeconfig", "system:kube-proxy", server,
                                *certs["kube-proxy"])
    pconf = m.dir / "kube-proxy.json"
    pconf.write_text(json.dumps({
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(proxy_kc)}, "mode": "iptables",
        "clusterCIDR": POD_CIDR, "hostnameOverride": m.name,
        "healthzBindAddress": "0.0.0.0:10256", "metricsBindAddress": "127.0.0.1:10249",
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s",
                      "tcpCloseWaitTimeout": "0s"},
    }))
    m.start("kube-proxy", [str(K8S_BIN / "kube-proxy"), f"--config={pconf}", "--v=1"])


def _nodes(c: LocalCluster) -> dict[str, dict[str, Any]]:
    items = json.loads(c.kubectl("get", "nodes", "-o", "json"))["items"]
    return {n["metadata"]["name"]: n for n in items}


def _wait_pod_cidrs(c: LocalCluster, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        c.check_alive()
        nodes = _nodes(c)
        if all(nodes.get(m.name, {}).get("spec", {}).get("podCIDR") for m in c.machines):
            for m in c.machines:
                m.pod_cidr = nodes[m.name]["spec"]["podCIDR"]
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"nodes not registered with a podCIDR after {timeout:.0f}s: "
                               f"{sorted(nodes)}; kubelet log: "
                               f"{(c.machines[-1].dir / 'kubelet.log').read_text()[-1500:]}")
        time.sleep(0.5)


def _bridge_conf(name: str, subnet: str, mtu: int) -> str:
    return json.dumps({"cniVersion": "1.0.0", "name": name, "plugins": [
        {"type": "bridge", "bridge": "cni0", "isGateway": True, "isDefaultGateway": True,
         "ipMasq": False, "hairpinMode": True, "mtu": mtu,
         "ipam": {"type": "host-local", "ranges": [[{"subnet": subnet}]]}},
        {"type": "portmap", "capabilities": {"portMappings": True}}]}, indent=1)


def _cni_routed(c: LocalCluster) -> None:
    for m in c.machines:
        for other in c.machines:
            if other is not m:
                m.run(["ip", "route", "add", other.pod_cidr, "via", other.address, "dev", "eth1"])
        _write_in(m, "/etc/cni/net.d/10-vnbt-routed.conflist",
                  _bridge_conf("vnbt-routed", m.pod_cidr, 1500))


def _write_in(m: K8sMachine, path: str, text: str) -> None:
    _run([*m.enter(), "sh", "-c", 'cat > "$1"', "sh", path], input_text=text)


def _cni_flannel(c: LocalCluster, certs: dict[str, tuple[Path, Path]]) -> None:
    kc = c.pki.kubeconfig(c.tmp / "flannel.kubeconfig", "flannel", c.server, *certs["flannel"])
    netconf = c.tmp / "net-conf.json"
    netconf.write_text(json.dumps({"Network": POD_CIDR, "Backend": {"Type": "vxlan"}}))
    for m in c.machines:
        m.start("flanneld", [str(K8S_BIN / "flanneld"), "--kube-subnet-mgr",
                             f"--kubeconfig-file={kc}", "--iface=eth1",
                             f"--net-config-path={netconf}", "--ip-masq=false",
                             "--subnet-file=/run/flannel/subnet.env"],
                env={"NODE_NAME": m.name})
    for m in c.machines:
        deadline = time.monotonic() + 90
        while True:
            m.check_alive()
            text = m.run(["cat", "/run/flannel/subnet.env"], check=False)
            if "FLANNEL_SUBNET=" in text:
                env = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"flanneld on {m.name} wrote no subnet.env: "
                                   f"{(m.dir / 'flanneld.log').read_text()[-1500:]}")
            time.sleep(0.3)
        _write_in(m, "/etc/cni/net.d/10-flannel.conflist",
                  _bridge_conf("cbr0", str(ipaddress.ip_network(env["FLANNEL_SUBNET"], strict=False)),
                               int(env.get("FLANNEL_MTU", "1450"))))


def _wait_ready(c: LocalCluster, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        c.check_alive()
        nodes = _nodes(c)
        ready = [name for name, n in nodes.items() if any(
            x["type"] == "Ready" and x["status"] == "True" for x in n["status"]["conditions"])]
        if sorted(ready) == sorted(c.node_names):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"nodes not Ready after {timeout:.0f}s (ready: {ready}); kubelet: "
                               f"{(c.machines[-1].dir / 'kubelet.log').read_text()[-1500:]}")
        time.sleep(0.5)


def _teardown(c: LocalCluster) -> list[str]:
    """Remove everything (a Ctrl-C meanwhile is acted on once it is done)."""
    from vnetbench.signals import deferred, raise_pending
    with deferred() as pending:
        problems = _remove_all(c)
    raise_pending(pending)
    return problems


def _remove_all(c: LocalCluster) -> list[str]:
    problems: list[str] = []
    # One at a time, the last started first: each daemon stops while what it talks to still
    # answers (kube-apiserver stopped after etcd waits ~15 s for it; stopped first, ~1 s).
    for m in reversed(c.machines):
        for role in reversed(list(m.procs)):
            proc = m.procs[role]
            if proc.poll() is None:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
    for m in c.machines:
        try:  # the shims, the pods' processes, and the init
            _kill_all(partial(_machine_pids, m), m.netns)
        except RuntimeError as exc:
            problems.append(str(exc))
        if m.init is not None:
            with suppress(subprocess.TimeoutExpired):
                m.init.wait(timeout=5)
            for stream in (m.init.stdout, m.init.stderr):
                if stream is not None:
                    stream.close()
        problems += _remove_cgroups(m)
    for ns in [*(m.netns for m in c.machines), f"{c.prefix}-sw"]:
        if (Path("/run/netns") / ns).exists():
            got = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True,
                                 check=False)
            if got.returncode != 0:
                problems.append(f"ip netns del {ns}: {got.stderr.strip()}")
    if Path(f"/sys/class/net/{c.prefix}c").exists():
        subprocess.run(["ip", "link", "del", f"{c.prefix}c"], capture_output=True, check=False)
    shutil.rmtree(c.tmp, ignore_errors=True)
    if c.tmp.exists():
        problems.append(f"{c.tmp} not removed")
    return problems


@contextmanager
def local_cluster(nodes: int = 2, cni: str = "routed",
                  images: Sequence[Path] = ()) -> Iterator[LocalCluster]:
    """A running cluster of ``nodes`` emulated machines with the ``cni`` setup (``routed`` or
    ``flannel``) and ``images`` (archives) on every node; everything removed on exit."""
    if not 2 <= nodes <= 3 or cni not in ("routed", "flannel"):
        raise ValueError("nodes: 2..3; cni: routed or flannel")
    missing = missing_parts(cni)
    if missing:
        raise RuntimeError(f"missing for a local cluster: {', '.join(missing)} (run "
                           "scripts/setup.d/60-kubernetes.sh)")
    prefix = f"vnbt{secrets.token_hex(2)}"
    net = free_test_net()
    tmp = Path(tempfile.mkdtemp(prefix=f"{prefix}-k8s-", dir="/var/tmp"))
    c = LocalCluster(prefix=prefix, net=net, cni=cni, tmp=tmp, kubeconfig=tmp / "admin.kubeconfig")
    c.machines = [K8sMachine(i, f"{prefix}-m{i}", f"{prefix}-m{i}", f"{net}.{10 + i}",
                             tmp / f"m{i}") for i in range(nodes)]
    pause = (PAUSE_ARCHIVE.parent / "pause.name").read_text().strip()
    try:
        t0 = time.monotonic()
        c._pki = Pki(tmp / "pki")
        certs = _certificates(c)
        c.pki.kubeconfig(c.kubeconfig, "vnbt-admin", c.server, *certs["admin"])
        c.timings["certificates_s"] = time.monotonic() - t0
        t1 = time.monotonic()
        _network(c)
        for m in c.machines:
            m.dir.mkdir()
            _start_init(m)
        _start_control_plane(c, certs)
        c.timings["control_plane_s"] = time.monotonic() - t1
        t2 = time.monotonic()
        for m in c.machines:
            _start_node(c, m, certs, images, pause)
        _wait_pod_cidrs(c, timeout=120)
        c.timings["nodes_s"] = time.monotonic() - t2
        t3 = time.monotonic()
        if cni == "routed":
            _cni_routed(c)
        else:
            _cni_flannel(c, certs)
        _wait_ready(c, timeout=120)
        c.timings["cni_s"] = time.monotonic() - t3
        c.timings["total_s"] = time.monotonic() - t0
        yield c
    except BaseException:
        _teardown(c)
        raise
    problems = _teardown(c)
    if problems:
        raise RuntimeError("local cluster not fully removed: " + "; ".join(problems))


def leftover_processes(c: LocalCluster) -> list[int]:
    """PIDs still in any machine (empty after teardown)."""
    return [pid for m in c.machines if m.init is not None for pid in _machine_pids(m)]
