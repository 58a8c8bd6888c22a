"""Docker operations shared by every place engines live: the emulated hosts' private engines
(``runtime``) and real machines' own (``remote.docker``). Each takes a ``HostClient``, how
``docker <args>`` is run against host ``i``'s engine (a local socket, or over SSH), so the
steps a lab takes with its engines are written once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from vnetbench.backends.docker.modes import DockerMode
from vnetbench.backends.docker.steps import TOKEN, Phase, image_ref, own_networks, run_label
from vnetbench.errors import LabError, VnetbenchError
from vnetbench.lab.topology import Topology

T = TypeVar("T")


class HostClient(Protocol):
    """``docker <args>`` against host ``host``'s engine: its output; VnetbenchError on failure."""

    def __call__(self, host: int, args: Sequence[str], timeout: float = ...) -> str: ...


def parallel(fn: Callable[[int], T], hosts: Sequence[int]) -> list[T]:
    """``fn(host)`` for every host at once; the first failure is raised after all ended."""
    if len(hosts) == 1:
        return [fn(hosts[0])]
    with ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
        futures = [pool.submit(fn, i) for i in hosts]
        return [f.result() for f in futures]


def run_phase(client: HostClient, phase: Phase, containers: dict[int, str],
              captured: dict[str, str]) -> None:
    """One phase's steps, hosts in parallel and each host's in order; a started container's
    id goes into ``containers`` and a captured output (the swarm token) into ``captured``."""
    by_host: dict[int, list[Any]] = {}
    for step in phase.steps:
        by_host.setdefault(step.host, []).append(step)

    def run_host(i: int) -> None:
        for step in by_host[i]:
            args = [captured.get("token", a) if a == TOKEN else a for a in step.args]
            try:
                out = client(i, args).strip()
            except VnetbenchError as exc:
                raise LabError(f"docker {phase.title} failed: {exc}") from exc
            if step.node is not None:
                containers[step.node] = out.splitlines()[-1]
            if step.capture:
                captured[step.capture] = out

    parallel(run_host, sorted(by_host))


def container_pids(client: HostClient, topo: Topology,
                   containers: dict[int, str]) -> dict[str, int]:
    """Container id -> the PID of its main process, for every node's container."""
    pids: dict[str, int] = {}
    for i in range(topo.hosts):
        ids = [containers[j] for j in topo.node_ids_on(i)]
        out = client(i, ["inspect", "--format", "{{.Id}} {{.State.Pid}}", *ids])
        pids |= {cid: int(pid) for cid, pid in (ln.split() for ln in out.splitlines() if ln)}
    return pids


def clear_run(client: HostClient, i: int, topo: Topology, mode: DockerMode) -> None:
    """Remove the run's containers, networks and image from host ``i``'s engine (an overlay
    network is removed once, on the swarm manager, host 0)."""
    ids = client(i, ["ps", "--all", "--quiet", "--filter", f"label={run_label(topo)}"],
                 timeout=30).split()
    if ids:
        client(i, ["rm", "--force", *ids], timeout=60)
    existing = client(i, ["network", "ls", "--format", "{{.Name}}"], timeout=30).split()
    for name in own_networks(topo, mode):
        if name in existing and (i == 0 or mode.network != "overlay"):
            client(i, ["network", "rm", name], timeout=30)
    client(i, ["image", "rm", "--force", image_ref(topo)], timeout=30)


def primary_address(ip_json: str, where: str) -> tuple[str, str]:
    """(IPv4 address, device) from ``ip -j -4 addr show dev eth0`` of a container, as Docker
    configured it; LabError naming ``where`` when it has none."""
    for link in json.loads(ip_json or "[]"):
        for addr in link.get("addr_info", []):
            if addr.get("family") == "inet":
                return str(addr["local"]), str(link.get("ifname", "eth0"))
    raise LabError(f"the container behind {where} has no IPv4 address on eth0")
