"""The shape shared by workloads made of an outside server and client (iperf3, sockperf, a
user's own ``command``): servers spawned in their nodes, clients run against them.

``prepare`` starts one server per server node of the workload's pairs (``node.spawn``, so
it is recorded in the run's state and stopped by PID), each on ``lab.listen_port`` of every
port it serves, and waits until every port listens inside the node (TCP listening, UDP
bound), failing at once with the server's log tail if it exits first. ``run`` starts one
client per pair (one after another, or all at once), each reaching its server at
``lab.endpoint`` (through a published port on ``nat``; TCP and UDP on the same published
number for ``tcp+udp``), bounded by the client's timeout; keeps each client's stdout (and
stderr) under ``raw_dir`` with the servers' logs; and turns each output into samples
labelled ``server``/``client`` and the pair's own labels. ``cleanup`` stops the servers.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vnetbench.errors import CommandError, MissingToolError, WorkloadError
from vnetbench.host.node import listening_in
from vnetbench.results.model import Sample
from vnetbench.workloads.base import WorkloadBase

if TYPE_CHECKING:
    from vnetbench.host.node import Node
    from vnetbench.workloads.labview import LabView

READY_POLL_S = 0.02


@dataclass(frozen=True)
class Pair:
    """One client run: who serves, who measures, the labels that tell this run from the
    others of the same workload, and the suffix of its raw files."""

    server: Node
    client: Node
    labels: dict[str, str] = field(default_factory=dict)
    suffix: str = ""


@dataclass(frozen=True)
class ClientRun:
    """A finished client: its output, exit status and wall time."""

    pair: Pair
    result: subprocess.CompletedProcess[str]
    elapsed_s: float


def find_tool(name: str) -> str:
    """The path of a Debian-packaged peer tool (``iperf3``, ``sockperf``); MissingToolError
    saying how to install it."""
    path = shutil.which(name)
    if path is None:
        raise MissingToolError(f"{name} not found: apt-get install {name} "
                               "(or run scripts/setup.sh)")
    return path


def hostport(addr: str, port: int) -> str:
    """``addr:port`` (``[addr]:port`` for IPv6)."""
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def output_tail(result: subprocess.CompletedProcess[str], lines: int = 3) -> str:
    return " | ".join((result.stderr or result.stdout or "").strip().splitlines()[-lines:])


def _log_tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except FileNotFoundError:
        return "(no output)"


class ServedWorkload(WorkloadBase, ABC):
    """Servers on the pairs' server nodes, one client per pair (see the module docstring).

    Subclasses say who pairs with whom (``pairs``), the server's and client's command lines
    and how a client's output becomes samples."""

    name: str
    protocol: str = "tcp"
    """What the servers listen on: ``tcp``, ``udp`` or ``tcp+udp`` (every port)."""
    ready_protocol: str | None = None
    """What a server listens on before any client came (default: ``protocol``): iperf3
    opens its UDP socket only when a client's control connection asks for a UDP test."""
    ready_timeout: float = 10.0
    concurrent_clients: bool = False
    """Run every pair's client at once (default: one after another)."""
    raw_name: str = ""
    """Prefix of the raw files (default: ``name``): tells two runs of a workload in one
    trial apart (``iperf3-udp-x1``)."""

    def __init__(self, base_ports: Sequence[int]) -> None:
        self.base_ports = tuple(base_ports)
        self._servers: list[tuple[Node, subprocess.Popen[bytes], Path]] = []
        self._ports: dict[int, list[int]] = {}
        """Ports each server node (by ``id``) listens on, in ``base_ports`` order."""
        self._pairs: list[Pair] = []
        self._dir: Path | None = None

    # ---- what a subclass says -------------------------------------------------------
    @abstractmethod
    def pairs(self, lab: LabView) -> list[Pair]:
        """Who serves and who measures."""

    @abstractmethod
    def server_argv(self, lab: LabView, node: Node, ports: list[int]) -> list[str] | None:
        """The server's command line on ``node`` listening on ``ports`` (None: no server)."""

    @abstractmethod
    def client_argv(self, lab: LabView, pair: Pair, endpoints: list[tuple[str, int]]) -> list[str]:
        """The client's command line, given where it reaches each of its server's ports."""

    @abstractmethod
    def client_timeout(self) -> float:
        """Seconds a client may run before it is killed (and the workload fails)."""

    @abstractmethod
    def samples(self, run: ClientRun, raw: Path) -> list[Sample]:
        """Samples of one finished client (its stdout is saved at ``raw``)."""

    def process_env(self) -> Mapping[str, str] | None:
        return None

    # ---- lifecycle ------------------------------------------------------------------
    @property
    def work_dir(self) -> Path:
        """A directory of this workload's own under the lab's (servers' logs, files)."""
        if self._dir is None:
            raise WorkloadError(f"{self.name}: used before prepare()")
        return self._dir

    def listen_ports(self, node: Node) -> list[int]:
        """The ports ``node``'s server listens on (after ``prepare``)."""
        return self._ports[id(node)]

    def prepare(self, lab: LabView) -> None:
        self._dir = lab.work_dir / f"{self.name}-{time.monotonic_ns()}"
        self._dir.mkdir(parents=True)
        self._pairs = self.pairs(lab)
        servers = {id(p.server): p.server for p in self._pairs}
        for k, node in enumerate(servers.values()):
            ports = [lab.listen_port(node, p) for p in self.base_ports]
            self._ports[id(node)] = ports
            argv = self.server_argv(lab, node, ports)
            if argv is None:
                continue
            log = self._dir / f"server{k}-{node.name}.log"
            proc = node.spawn(argv, log=log, env=self.process_env())
            self._servers.append((node, proc, log))
            self._wait_ready(node, proc, ports, log)

    def _wait_ready(self, node: Node, proc: subprocess.Popen[bytes], ports: list[int],
                    log: Path) -> None:
        ready = self.ready_protocol or self.protocol
        protos = ("tcp", "udp") if ready == "tcp+udp" else (ready,)
        deadline = time.monotonic() + self.ready_timeout
        for proto in protos:
            for port in ports:
                while not listening_in(node.proc_net(proto), port, proto):
                    if proc.poll() is not None:
                        raise WorkloadError(f"{self.name}: the server in {node.name} exited "
                                            f"{proc.returncode} before listening on {proto} "
                                            f"port {port}: {_log_tail(log)}")
                    if time.monotonic() > deadline:
                        raise WorkloadError(f"{self.name}: nothing listens on {proto} port "
                                            f"{port} in {node.name} {self.ready_timeout:g} s "
                                            f"after the server started: {_log_tail(log)}")
                    time.sleep(READY_POLL_S)

    def run(self, lab: LabView, raw_dir: Path) -> list[Sample]:
        if self._dir is None:
            raise WorkloadError(f"{self.name}: run() before prepare()")
        raw_dir.mkdir(parents=True, exist_ok=True)
        argvs = []
        for pair in self._pairs:
            endpoints = [lab.endpoint(pair.client, pair.server, port, proto=self.protocol)
                         for port in self._ports[id(pair.server)]]
            argvs.append(self.client_argv(lab, pair, endpoints))
        if self.concurrent_clients and len(self._pairs) > 1:
            with ThreadPoolExecutor(max_workers=len(self._pairs)) as pool:
                runs = list(pool.map(self._client, self._pairs, argvs))
        else:
            runs = [self._client(pair, argv) for pair, argv in zip(self._pairs, argvs,
                                                                  strict=True)]
        prefix = self.raw_name or self.name
        for _, _, log in self._servers:
            shutil.copyfile(log, raw_dir / f"{prefix}-{log.name}")
        samples: list[Sample] = []
        for run in runs:
            raw = raw_dir / f"{prefix}-client{run.pair.suffix}.out"
            raw.write_text(run.result.stdout or "")
            if (run.result.stderr or "").strip():
                raw.with_suffix(".stderr").write_text(run.result.stderr)
            if run.result.returncode != 0:
                raise WorkloadError(f"{self.name}: the client in {run.pair.client.name} exited "
                                    f"{run.result.returncode}: {output_tail(run.result)}")
            labels = {"server": run.pair.server.name, "client": run.pair.client.name,
                      **run.pair.labels}
            samples += [s.with_labels(**labels) for s in self.samples(run, raw)]
        return samples

    def _client(self, pair: Pair, argv: list[str]) -> ClientRun:
        timeout = self.client_timeout()
        t0 = time.monotonic()
        try:
            result = pair.client.run(argv, timeout=timeout, check=False, env=self.process_env())
        except CommandError as exc:  # killed at the timeout
            raise WorkloadError(f"{self.name}: the client in {pair.client.name} did not end "
                                f"within {timeout:g} s and was killed: {exc}") from None
        return ClientRun(pair, result, time.monotonic() - t0)

    def cleanup(self, lab: LabView) -> None:
        for _, proc, _ in reversed(self._servers):
            lab.stop(proc)
        self._servers, self._ports, self._pairs = [], {}, []
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def first_pair(lab: LabView, name: str, client_side: str = "node",
               server_side: str = "node") -> Pair:
    """Node 0 serves, node 1 measures (either on its host's own stack with ``host``)."""
    if len(lab.nodes) < 2:
        raise WorkloadError(f"{name} needs 2 nodes, the lab has {len(lab.nodes)}")
    first, second = lab.nodes[0], lab.nodes[1]
    server = lab.host_node(first.host) if server_side == "host" else first
    client = lab.host_node(second.host) if client_side == "host" else second
    return Pair(server, client)
