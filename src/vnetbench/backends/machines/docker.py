"""Docker layers on real machines: each machine's own engine (``docker: existing``), over SSH.

A lab on machines never starts an engine of its own there: a private engine in a machine's
own network namespace (the only place it meets the real NIC) would write Docker's chains
into the machine's firewall and make bridges outside the run's names, which a lab on real
machines does not do. The machines' engines are used instead, through their ``docker``
client as a root login there finds it (its ``DOCKER_HOST`` or context). What the lab
creates there carries the run's names and label: the node image ``vnb<id>-node``, a network
``vnb<id>-ub`` (a user bridge whose device is ``vnb<id>b<i>``) or ``vnb<id>-mv`` (macvlan on
the underlay), the containers ``vnb<id>-n<j>``, their namespaces attached as
``vnb<id>-n<j>``, and for the routed user bridge one rule in Docker's DOCKER-USER chain,
commented ``vnb<id>``, admitting the lab's block. Teardown (and ``vnetbench clean --host``,
through the machine's teardown script) removes exactly those.

Modes a machine's engine can give as they are: ``docker-host``, ``docker-userbridge`` and
``docker-macvlan``. ``docker-bridge`` needs docker0 on the lab's subnet without masquerading
(engine settings), ``docker-overlay`` joins the engines to a swarm (engine state beyond the
run's objects), ``docker-nat``/``docker-proxy`` publish ports in the machine's firewall:
each is refused before anything is built.
"""

from __future__ import annotations

import shlex
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vnetbench.backends.docker.image import rootfs_members, write_rootfs
from vnetbench.backends.docker.modes import DockerLayer
from vnetbench.backends.docker.ops import (
    clear_run,
    container_pids,
    parallel,
    primary_address,
    run_phase,
)
from vnetbench.backends.docker.steps import Phase, image_ref, own_networks, run_label
from vnetbench.backends.machines.node import MachineNode
from vnetbench.backends.machines.ssh import SshConnection
from vnetbench.errors import CommandError, LabError, UnsupportedError, VnetbenchError
from vnetbench.host.binaries import find_binary
from vnetbench.host.node import Node
from vnetbench.host.processes import ProcessTracker
from vnetbench.lab.spec import MachineSpec
from vnetbench.lab.topology import Topology

MACHINE_MODES = ("host", "userbridge", "macvlan")
"""Docker network modes a machine's own engine gives without changing its settings."""
ROOTFS = "node-rootfs.tar"
CLIENT_TIMEOUT_S = 120.0
REFUSED = {
    "bridge": "needs docker0 on the lab's subnet without masquerading, settings of the "
              "engine itself: use docker-userbridge (a bridge network of the run's own, "
              "routed the same way)",
    "overlay": "joins the machines' engines to a swarm, which changes their state beyond the "
               "run's own objects",
}


def check_machine_layer(layer: DockerLayer) -> None:
    """UnsupportedError when a Docker mode cannot run on machines' own engines (modes that
    publish ports the machines backend refuses before, with every such layer)."""
    network = layer.mode.network
    if network not in MACHINE_MODES:
        raise UnsupportedError(f"layer {layer.name!r} cannot run on machines' own Docker "
                               f"engines: it {REFUSED.get(network, 'is not supported there')}")


def engine_problems(specs: Sequence[MachineSpec], conns: Sequence[SshConnection]) -> list[str]:
    """One line per machine that cannot host Docker layers (it did not say ``docker:
    existing``, or its engine does not answer its ``docker`` client); [] when all can."""
    problems: list[str] = []
    for spec, conn in zip(specs, conns, strict=True):
        if spec.docker != "existing":
            problems.append(
                f"host {spec.ssh}: Docker layers on real machines use the machine's own engine: "
                "add `docker: existing` to it under hosts (vnetbench does not start an engine "
                "there: it would add Docker's chains to the machine's firewall)")
            continue
        try:
            engine_version(conn)
        except VnetbenchError as exc:
            problems.append(f"host {spec.ssh}: its Docker engine does not answer `docker "
                            f"version`: {_last_line(str(exc))} (is dockerd running, and does "
                            "a root login reach it?)")
    return problems


def engine_version(conn: SshConnection) -> str:
    """The machine's engine version (CommandError/LabError when it does not answer)."""
    got = conn.run(["docker", "version", "--format", "{{.Server.Version}}"], timeout=30.0)
    return got.stdout.strip()


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"


def attached_namespaces(topo: Topology, layer: DockerLayer) -> dict[int, list[str]]:
    """The containers' namespaces the lab attaches on each machine (none for host mode)."""
    if layer.mode.network == "host":
        return {}
    out: dict[int, list[str]] = {}
    for j in range(topo.nodes):
        out.setdefault(topo.host_of(j), []).append(topo.names.node_ns(j))
    return out


def admit_rule(topo: Topology) -> list[str]:
    """The DOCKER-USER rule admitting the lab's routed traffic (iptables arguments)."""
    base = topo.addresses.base
    return ["DOCKER-USER", "-s", base, "-d", base, "-m", "comment", "--comment",
            topo.names.prefix, "-j", "ACCEPT"]


def teardown_lines(topo: Topology, layer: DockerLayer) -> list[str]:
    """Shell lines removing the run's Docker objects from a machine's engine (safe to run
    twice; run first by the machine's teardown script)."""
    label = shlex.quote(f"label={run_label(topo)}")
    nets = " ".join(shlex.quote(n) for n in own_networks(topo, layer.mode))
    rule = shlex.join(admit_rule(topo))
    lines = [
        "if command -v docker >/dev/null 2>&1; then",
        f"  ids=$(docker ps --all --quiet --filter {label} 2>/dev/null)",
        "  [ -n \"$ids\" ] && docker rm --force $ids >/dev/null",
        f"  for n in {nets}; do docker network rm \"$n\" >/dev/null 2>&1; done" if nets else "  :",
        f"  docker image rm --force {shlex.quote(image_ref(topo))} >/dev/null 2>&1",
        "fi",
    ]
    if layer.mode.routed:
        lines.append(f"while iptables -w -D {rule} 2>/dev/null; do :; done")
    return lines


class MachineDocker:
    """The Docker side of a lab on machines: image, networks, containers -> nodes; and back."""

    def __init__(self, conns: Sequence[SshConnection], topo: Topology, layer: DockerLayer,
                 phases: Sequence[Phase], remote_dir: str) -> None:
        self.conns = list(conns)
        self.topo = topo
        self.layer = layer
        self.phases = tuple(phases)
        self.remote_dir = remote_dir
        self.containers: dict[int, str] = {}
        self.facts: dict[str, Any] = {"mode": layer.name, "twin": layer.mode.twin,
                                      "engine": "existing"}

    def client(self, host: int, args: Sequence[str], timeout: float = CLIENT_TIMEOUT_S) -> str:
        """``docker <args>`` on machine ``host``; LabError naming the machine on a failure."""
        try:
            return self.conns[host].run(["docker", *args], timeout=timeout).stdout
        except CommandError as exc:
            raise LabError(f"`docker {' '.join(args[:3])}` on host {self.conns[host].target} "
                           f"failed: {_last_line(exc.stderr)}") from exc

    # ---- build ------------------------------------------------------------------------
    def start(self, tracker: ProcessTracker, programs: dict[str, str]) -> list[Node]:
        hosts = list(range(self.topo.hosts))
        self.facts["engine_versions"] = parallel(lambda i: engine_version(self.conns[i]), hosts)
        with tempfile.TemporaryDirectory(prefix="vnb-rootfs-") as tmp:
            local = Path(tmp) / ROOTFS
            write_rootfs(local, rootfs_members(find_binary("vnetbench-probe")))
            for conn in self.conns:  # in turn: machines may share a disk
                conn.put(local, f"{self.remote_dir}/{ROOTFS}", 0o600)
        for phase in self.phases:
            run_phase(self.client, phase, self.containers, {})
        parallel(lambda i: self.conns[i].run(["rm", "-f", f"{self.remote_dir}/{ROOTFS}"]), hosts)
        if self.layer.mode.routed:
            for conn in self.conns:
                conn.run(["iptables", "-w", "-I", *admit_rule(self.topo)], timeout=30.0)
        return self._make_nodes(tracker, programs)

    def _make_nodes(self, tracker: ProcessTracker, programs: dict[str, str]) -> list[Node]:
        topo, names = self.topo, self.topo.names
        host_mode = self.layer.mode.network == "host"
        pids = container_pids(self.client, topo, self.containers)
        nodes: list[Node] = []
        for j in range(topo.nodes):
            i, conn = topo.host_of(j), self.conns[topo.host_of(j)]
            placement = self.layer.placement(topo, j)
            ip, ifname, netns = placement.ip, placement.ifname, None
            if not host_mode:
                netns = names.node_ns(j)
                conn.run(["ip", "netns", "attach", netns, str(pids[self.containers[j]])],
                         timeout=30.0)
                shown = conn.run(["ip", "-n", netns, "-j", "-4", "addr", "show", "dev", "eth0"],
                                 timeout=30.0).stdout
                ip, ifname = primary_address(shown, f"{netns} on host {conn.target}")
            nodes.append(MachineNode(
                j, i, None, ip, ifname, None, conn=conn, tracker=tracker, machine_netns=netns,
                pid_file=f"{self.remote_dir}/pids-h{i}", remote_dir=self.remote_dir,
                programs=programs, machine=conn.target))
        self.facts["containers"] = {f"n{j}": cid[:12] for j, cid in self.containers.items()}
        return nodes

    # ---- teardown ---------------------------------------------------------------------
    def stop(self) -> list[str]:
        """Remove the run's containers, networks, image and rule from every engine."""
        problems: list[str] = []

        def clear(i: int) -> None:
            try:
                clear_run(self.client, i, self.topo, self.layer.mode)
            except VnetbenchError as exc:
                problems.append(f"docker on host {self.conns[i].target}: {exc}")

        parallel(clear, list(range(len(self.conns))))
        return problems
