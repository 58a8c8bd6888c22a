"""Carrying out a Docker lab: engines up -> image, networks, containers -> lab nodes; and back.

``DockerRuntime.start`` runs after the lab's kernel plan (underlay, engine daemons) is
applied: it waits until every engine answers, writes the node image, runs the planned phases
(``steps.build_phases``), admits the lab's routed traffic in routed modes, and makes a
``NamespaceNode`` of every container: its network namespace is attached as ``vnb<id>-n<j>``
(so the lab's collectors, ``wait_listening`` and teardown see it as any node's), and its
cgroup is the container's own (so Docker's ``--cpus``/``--memory`` limits apply to everything a
workload starts in the node). A workload's processes enter the container's network
namespace and cgroup from the host's filesystem (as ``nsenter --net`` would), so every
workload runs unchanged and is stopped by PID. For docker-overlay the overlay network's own
namespace (its bridge and VXLAN device) is attached as ``vnb<id>-o<i>`` for the evidence.

``stop`` removes every container, network and image labelled with the run, stops the
engines (each takes its containerd, shims and docker-proxy processes with it, and its
private mounts vanish with its mount namespace) and deletes the engines' directories.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vnetbench.backends.base import LabContext
from vnetbench.backends.docker.engine import (
    CLIENT_TIMEOUT,
    DockerClient,
    docker_root,
    find_docker_client,
    find_dockerd,
    socket_path,
)
from vnetbench.backends.docker.image import rootfs_members, write_rootfs
from vnetbench.backends.docker.modes import DockerLayer, DockerOptions
from vnetbench.backends.docker.ops import (
    clear_run,
    container_pids,
    parallel,
    primary_address,
    run_phase,
)
from vnetbench.backends.docker.steps import Phase, network_name
from vnetbench.backends.netns.node import NamespaceNode
from vnetbench.errors import LabError, VnetbenchError
from vnetbench.host import kernel
from vnetbench.host.binaries import find_binary
from vnetbench.host.cgroups import NodeCgroup
from vnetbench.host.netns import NETNS_DIR, in_netns
from vnetbench.host.node import Node
from vnetbench.host.state import DISK_WORK_ROOT
from vnetbench.lab.plan import IpBatch

ENGINE_STOP_GRACE = 20.0
"""Seconds an engine gets to shut down (a swarm manager takes several) before SIGKILL."""
OVERLAY_NS_TIMEOUT = 10.0
RECORDED_SYSCTLS = ("net.ipv4.ip_forward", "net.bridge.bridge-nf-call-iptables",
                    "net.ipv4.conf.all.rp_filter", "net.ipv6.conf.all.disable_ipv6")


class DockerRuntime:
    """The Docker side of one lab (made by ``DockerBackend.realise``)."""

    def __init__(self, lab: LabContext, phases: Sequence[Phase], rootfs: Path) -> None:
        layer, options = lab.plan.layer, lab.plan.options
        if not isinstance(layer, DockerLayer) or not isinstance(options, DockerOptions):
            raise LabError(f"layer {layer.name} is not a Docker network mode")
        self.lab = lab
        self.layer = layer
        self.topo = lab.topo
        self.mode = layer.mode
        self.options = options
        self.phases = tuple(phases)
        self.rootfs = rootfs
        client = find_docker_client(find_dockerd())
        self.clients = [DockerClient(client, socket_path(self.topo, i), f"host {i}")
                        for i in range(self.topo.hosts)]
        self.containers: dict[int, str] = {}
        self.facts: dict[str, Any] = {"mode": layer.name, "twin": self.mode.twin}

    def _client(self, host: int, args: Sequence[str], timeout: float = CLIENT_TIMEOUT) -> str:
        return self.clients[host](args, timeout=timeout)

    # ---- build ------------------------------------------------------------------------
    def start(self) -> list[Node]:
        hosts = list(range(self.topo.hosts))
        versions = parallel(lambda i: self.clients[i].wait_ready(), hosts)
        self.facts["engine_version"] = versions[0]
        write_rootfs(self.rootfs, rootfs_members(find_binary("vnetbench-probe")))
        captured: dict[str, str] = {}
        for phase in self.phases:
            run_phase(self._client, phase, self.containers, captured)
        self.rootfs.unlink()
        if self.mode.routed and self.mode.engine.iptables:
            self._admit_lab_traffic()
        nodes = self._make_nodes()
        if self.mode.network == "overlay":
            self._attach_overlay_namespaces()
        self._record_sysctls([n.netns for n in nodes if n.netns is not None])
        return list(nodes)

    def _admit_lab_traffic(self) -> None:
        """Docker drops forwarded traffic it did not publish: admit the lab's own block in
        DOCKER-USER, the chain Docker keeps for such rules."""
        base = self.topo.addresses.base
        for i in range(self.topo.hosts):
            kernel.run_in(self.topo.names.host_ns(i), [
                "iptables", "-w", "-I", "DOCKER-USER", "-s", base, "-d", base, "-j", "ACCEPT"])

    def _make_nodes(self) -> list[NamespaceNode]:
        topo, names = self.topo, self.topo.names
        pids = container_pids(self._client, topo, self.containers)
        host_mode = self.mode.network == "host"
        if not host_mode:
            attach = [names.node_ns(j) for j in range(topo.nodes)]
            self.lab.record_namespaces(attach)
            kernel.apply_batch(IpBatch(None, tuple(
                f"netns attach {names.node_ns(j)} {pids[self.containers[j]]}"
                for j in range(topo.nodes))))
        nodes = []
        for j in range(topo.nodes):
            i = topo.host_of(j)
            placement = self.layer.placement(topo, j)
            ip, ifname = placement.ip, placement.ifname
            if not host_mode:
                ip, ifname = primary_address(kernel.run_checked(
                    ["ip", "-n", placement.netns, "-j", "-4", "addr", "show", "dev", "eth0"],
                    where=f"namespace {placement.netns}"), placement.netns)
            nodes.append(NamespaceNode(j, i, placement.netns, ip, ifname,
                                       self._container_cgroup(i, self.containers[j]),
                                       tracker=self.lab.tracker))
        self.facts["containers"] = {f"n{j}": cid[:12] for j, cid in self.containers.items()}
        return nodes

    def _container_cgroup(self, host: int, cid: str) -> NodeCgroup:
        run_dirs, version = self.lab.cgroups.run_dirs(), self.lab.cgroups.version
        dirs = tuple(d / f"h{host}" / cid for d in run_dirs if (d / f"h{host}" / cid).is_dir())
        if not dirs:
            raise LabError(f"container {cid[:12]}'s cgroup is not under {run_dirs[0]}/h{host}: "
                           "did the engine ignore its cgroup-parent?")
        return NodeCgroup(dirs, version)

    def _attach_overlay_namespaces(self) -> None:
        """The overlay network's namespace on each host (bridge + VXLAN device), attached
        as ``vnb<id>-o<i>`` so its devices' counters are part of the evidence."""
        name = network_name(self.topo, self.mode)
        net_id = self.clients[0](["network", "inspect", "--format", "{{.Id}}", name]).strip()
        for i in range(self.topo.hosts):
            engine = self.lab.applier.daemons.get(f"dockerd h{i}")
            if engine is None:
                continue
            source = Path(f"/proc/{engine.pid}/root/run/docker/netns/1-{net_id[:10]}")
            deadline = time.monotonic() + OVERLAY_NS_TIMEOUT
            while not source.exists():
                if time.monotonic() > deadline:
                    raise LabError(f"the overlay namespace of host {i} did not appear at {source}")
                time.sleep(0.02)
            target = NETNS_DIR / f"{self.topo.names.prefix}-o{i}"
            self.lab.record_namespaces([target.name])
            target.touch()
            kernel.run_checked(["mount", "--bind", str(source), str(target)],
                               where=f"attaching the overlay namespace of host {i}")

    def _record_sysctls(self, node_namespaces: list[str]) -> None:
        """What Docker left the sysctls the paths depend on at (it sets some itself)."""
        namespaces = [self.topo.names.host_ns(i) for i in range(self.topo.hosts)]
        namespaces += [ns for ns in node_namespaces if ns not in namespaces]
        for ns in namespaces:
            self.lab.sysctls.setdefault(ns, {}).update(in_netns(ns, _read_sysctls))

    # ---- teardown ---------------------------------------------------------------------
    def stop(self) -> list[str]:
        """Remove containers, networks and image; stop the engines; delete their files."""
        problems: list[str] = []
        engines = {i: p for i in range(self.topo.hosts)
                   if (p := self.lab.applier.daemons.get(f"dockerd h{i}")) is not None}
        live = [i for i, p in engines.items()  # engines up and serving their API
                if p.poll() is None and self.clients[i].socket.exists()]

        def clear(i: int) -> None:
            try:
                clear_run(self._client, i, self.topo, self.mode)
            except VnetbenchError as exc:
                problems.append(f"docker on host {i}: {exc}")

        if live:
            parallel(clear, live)
        if engines:
            parallel(lambda i: self.lab.tracker.stop(engines[i], grace=ENGINE_STOP_GRACE),
                      list(engines))
        shutil.rmtree(docker_root(self.topo), ignore_errors=True)
        with contextlib.suppress(OSError):
            (DISK_WORK_ROOT / self.topo.names.short_id).rmdir()
        return problems


def _read_sysctls() -> dict[str, str]:
    out = {}
    for key in RECORDED_SYSCTLS:
        path = kernel.sysctl_path(key)
        out[key] = path.read_text().strip() if path.exists() else "absent"
    return out
