"""The lab: a virtual cluster built from a plan, with nodes to run workloads in, torn down
without a trace.

    with open_lab(layer="bridge", hosts=2, nodes=4) as lab:
        server, client = lab.nodes[0], lab.nodes[1]
        port = lab.listen_port(server, 7000)
        server.spawn([probe, "serve", "--port", str(port)])
        server.wait_listening(port)
        addr, cport = lab.endpoint(client, server, port)
        client.run([probe, "rr", "--server", f"{addr}:{cport}"], timeout=30)

Lifecycle: check root, tools and kernel features (nothing built on failure); claim a short
id and a free /16 (state file); plan; apply the plan stage by stage; create per-node cgroups.
For a layer of the ``docker`` backend the plan starts an engine per host, and the nodes are
then containers made by ``vnetbench.backends.docker.runtime`` (their namespaces attached
under the run's names, their cgroups the containers' own).
Teardown (on success, error, Ctrl-C and SIGTERM; a signal arriving during teardown is acted
on right after it, see ``signals``) stops every process of the run by PID
(tracked ones; then Docker's containers, networks, images and engines; then any process left
inside a lab namespace), deletes the namespaces (which removes every link, route, rule and
qdisc in them), removes cgroups, files and the state file.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from vnetbench import kernel
from vnetbench.binaries import find_binary
from vnetbench.cgroups import CgroupSet, NodeCgroup
from vnetbench.errors import (
    CommandError,
    LabError,
    PermissionError_,
    UnsupportedError,
    VnetbenchError,
)
from vnetbench.features import FEATURE_ADVICE, find_wireguard_go, kernel_features
from vnetbench.layers.base import Layer, LayerOptions, NodePlacement, PlanContext
from vnetbench.layers.nat import NatOptions, dnat_chain
from vnetbench.layers.registry import get_layer
from vnetbench.layers.shaping import plan_link_shaping
from vnetbench.netns import (
    close_preexec,
    netns_inode,
    pids_in_netns,
    preexec,
    read_in_netns,
    submit_in_thread,
)
from vnetbench.placement import CpuPlacement, PlacementMode, plan_placement
from vnetbench.plan import (
    Command,
    Daemon,
    IpBatch,
    IptablesRestore,
    Plan,
    PlanBuilder,
    Sysctls,
    TcBatch,
    WriteFile,
)
from vnetbench.signals import Terminated, deferred, raise_pending, terminate_raises
from vnetbench.state import STATE_DIR, RunState, allocate
from vnetbench.topology import Addresses, LinkShape, Names, Resources, Topology

if TYPE_CHECKING:
    from vnetbench.backends.docker.runtime import DockerRuntime

WORK_ROOT = STATE_DIR / "work"
T = TypeVar("T")
READY_TIMEOUT = 15.0
STOP_GRACE = 3.0
PARALLEL = 8


BUSY_LOOP = """
import sys, time
duty, end = float(sys.argv[1]), time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    t = time.monotonic()
    while time.monotonic() - t < 0.01 * duty:
        pass
    if duty < 1.0:
        time.sleep(0.01 * (1.0 - duty))
"""


@dataclass
class Node:
    """A node of the lab: run commands inside it (its namespace and cgroups)."""

    lab: Lab
    index: int
    host: int
    netns: str
    ip: str
    ifname: str
    cgroup: NodeCgroup | None = None
    cpus: tuple[int, ...] | None = None
    """CPUs the node's processes are pinned to (``None``: not pinned); see ``placement``."""

    @property
    def name(self) -> str:
        return f"n{self.index}"

    def _preexec(self) -> Any:
        return preexec(self.netns, self.cgroup.procs_files if self.cgroup else (), self.cpus)

    def run(self, argv: Sequence[str], timeout: float = 60.0, check: bool = True,
            env: Mapping[str, str] | None = None,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside the node and wait (killed, with its group, at ``timeout``)."""
        enter = self._preexec()
        try:
            proc = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env={**os.environ, **(env or {})}, preexec_fn=enter,
            )
        except FileNotFoundError as exc:
            raise LabError(f"{argv[0]}: not found (running in node {self.name})") from exc
        finally:
            close_preexec(enter)
        try:
            out, err = proc.communicate(input_text, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise CommandError(argv, -9, f"timed out after {timeout:.0f}s; {err}",
                               f"node {self.name}") from None
        except BaseException:
            _kill_group(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        result = subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
        if check and proc.returncode != 0:
            raise CommandError(argv, proc.returncode, err or out, f"node {self.name}")
        return result

    def spawn(self, argv: Sequence[str], log: Path | None = None,
              env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start a long-lived process inside the node; the lab stops it at teardown."""
        return self.lab.spawn_in(self.netns, argv, log=log, env=env,
                                 cgroup_procs=self.cgroup.procs_files if self.cgroup else (),
                                 cpus=self.cpus)

    def start_busy(self, duty: float = 1.0, bound_s: float = 3600.0) -> subprocess.Popen[bytes]:
        """A CPU-bound neighbour inside the node's cgroup (spins ``duty`` of each 10 ms)."""
        return self.spawn([sys.executable, "-c", BUSY_LOOP, str(duty), str(bound_s)])

    def wait_listening(self, port: int, proto: str = "tcp", timeout: float = 10.0) -> None:
        """Return once a socket listens on ``port`` inside the node, else LabError."""
        deadline = time.monotonic() + timeout
        while True:
            if _listening(self.netns, port, proto):
                return
            if time.monotonic() > deadline:
                raise LabError(f"nothing listens on {proto} port {port} in node {self.name} "
                               f"after {timeout:.0f}s")
            time.sleep(0.01)


def _listening(netns: str, port: int, proto: str) -> bool:
    hexport = f"{port:04X}"
    for table in (f"net/{proto}", f"net/{proto}6"):
        try:
            text = read_in_netns(netns, table)
        except FileNotFoundError:
            continue
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) > 3 and fields[1].endswith(":" + hexport) and (
                    proto == "udp" or fields[3] == "0A"):
                return True
    return False


def _kill_group(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


@dataclass
class Lab:
    """A built virtual cluster; made by ``open_lab``."""

    topo: Topology
    layer: Layer
    options: LayerOptions
    state: RunState
    work_dir: Path
    plan: Plan | None = None
    nodes: list[Node] = field(default_factory=list)
    sysctls: dict[str, dict[str, str]] = field(default_factory=dict)
    build_seconds: float = 0.0
    _procs: list[tuple[str, subprocess.Popen[bytes], IO[bytes] | None]] = field(
        default_factory=list)
    _published: dict[tuple[int, int, str], int] = field(default_factory=dict)
    _cgroups: CgroupSet | None = None
    infra_cgroup: NodeCgroup | None = None
    """Cgroup of the lab's own daemons (link emulator, wireguard-go, tunnel forwarders,
    Docker engines)."""
    services: tuple[int, ...] = ()
    """Ports the workloads serve on (Docker publishes them when a container starts)."""
    runtime: DockerRuntime | None = None
    """The Docker side of a lab of the docker backend."""
    _daemons: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    placement: CpuPlacement = field(default_factory=lambda: CpuPlacement("off", ()))
    """Which CPUs nodes and daemons run on (the same rule for every layer)."""
    placement_misses: list[str] = field(default_factory=list)
    """Processes whose CPU affinity did not come out as placed (empty: placement held)."""

    @property
    def run_id(self) -> str:
        return self.state.short_id

    @property
    def names(self) -> Names:
        return self.topo.names

    @property
    def prefix(self) -> str:
        return self.topo.names.prefix

    def namespaces(self) -> list[str]:
        """The lab's namespaces: those it made, then those it attached (containers')."""
        return list(self.state.namespaces)

    def record_namespaces(self, names: Sequence[str]) -> None:
        """Claim namespaces about to be attached (so teardown and clean remove them)."""
        self.state.namespaces += [n for n in names if n not in self.state.namespaces]
        self.state.save()

    def interfaces(self) -> dict[str, list[str]]:
        """Every interface in the lab's namespaces, per namespace (loopback excluded): the
        lab's own (named with its prefix) and, in Docker labs, those Docker made."""
        out: dict[str, list[str]] = {}
        for ns in self.namespaces():
            text = read_in_netns(ns, "net/dev")
            names = [line.split(":", 1)[0].strip() for line in text.splitlines()[2:]]
            out[ns] = [n for n in names if n != "lo"]
        return out

    def cgroup_run_dirs(self) -> tuple[list[Path], int]:
        """The run's cgroup directory in each hierarchy, and the cgroup version."""
        cgroups = self._cgroups or CgroupSet(self.prefix)
        return cgroups.run_dirs(), cgroups.version

    def daemon_process(self, role: str) -> subprocess.Popen[bytes] | None:
        """The process of a daemon the plan started (``dockerd h0``, ...), if it was."""
        return self._daemons.get(role)

    # ---- services -------------------------------------------------------------------
    def listen_port(self, node: Node, base_port: int) -> int:
        """The port a service of ``node`` should bind, given its usual port.

        Nodes sharing a namespace (``host`` layer) get distinct ports: base + slot.
        """
        if self.layer.shares_host_netns:
            return base_port + self.topo.slot_of(node.index)
        return base_port

    def endpoint(self, client: Node, server: Node, port: int,
                 proto: str = "tcp") -> tuple[str, int]:
        """Address and port at which ``client`` reaches ``server``'s service on ``port``.

        For ``nat`` this publishes the port on the server's host (DNAT) on first use and
        returns the host's address, as a client of ``docker run -p`` would connect.
        """
        if not self.layer.publishes_ports:
            return server.ip, port
        if self.runtime is not None:
            return self.runtime.endpoint(server, port)
        host_ip = self.topo.addresses.host_underlay(server.host)
        protos = ("tcp", "udp") if proto == "tcp+udp" else (proto,)
        published = 0
        for p in protos:
            published = self._publish(server, port, p)
        return host_ip, published

    def _publish(self, server: Node, port: int, proto: str) -> int:
        with self._lock:
            key = (server.index, port, proto)
            if key in self._published:
                return self._published[key]
            used = {hp for (idx, _, pr), hp in self._published.items()
                    if self.topo.host_of(idx) == server.host and pr == proto}
            assert isinstance(self.options, NatOptions)
            host_port = port if port not in used else self.options.first_port
            while host_port in used:
                host_port += 1
            host_ip = self.topo.addresses.host_underlay(server.host)
            kernel.run_in(self.names.host_ns(server.host), [
                "iptables", "-t", "nat", "-A", dnat_chain(self.topo), "-d", host_ip, "-p", proto,
                "--dport", str(host_port), "-j", "DNAT", "--to-destination",
                f"{server.ip}:{port}",
            ])
            self._published[key] = host_port
            return host_port

    def published_ports(self) -> dict[tuple[int, int, str], int]:
        return dict(self._published)

    # ---- processes ------------------------------------------------------------------
    def spawn_in(self, netns: str, argv: Sequence[str], *, log: Path | None = None,
                 env: Mapping[str, str] | None = None, cgroup_procs: Sequence[Path] = (),
                 cpus: Sequence[int] | None = None) -> subprocess.Popen[bytes]:
        handle = open(log, "wb") if log else None  # noqa: SIM115 - closed at stop
        enter = preexec(netns, cgroup_procs, cpus)
        # Ctrl-C/SIGTERM wait until the child is tracked (the child unblocks them itself),
        # so an interrupt can never leave an untracked process behind.
        blocked = _block_signals()
        try:
            proc = subprocess.Popen(
                list(argv), stdin=subprocess.DEVNULL,
                stdout=handle or subprocess.DEVNULL, stderr=subprocess.STDOUT if handle else
                subprocess.DEVNULL, env={**os.environ, **(env or {})}, preexec_fn=enter,
            )
        except FileNotFoundError as exc:
            if handle:
                handle.close()
            raise LabError(f"{argv[0]}: not found (starting it in {netns})") from exc
        except BaseException:
            _unblock_signals(blocked)
            raise
        finally:
            close_preexec(enter)
        try:
            self._procs.append((netns, proc, handle))
            self.state.add_process(proc.pid)
        finally:
            _unblock_signals(blocked)
        if cpus:
            self._check_affinity(proc.pid, argv[0], cpus)
        return proc

    def _check_affinity(self, pid: int, what: str, cpus: Sequence[int]) -> None:
        try:
            got = os.sched_getaffinity(pid)
        except OSError:
            return  # already gone: nothing to check
        if got != set(cpus):
            self.placement_misses.append(f"{Path(what).name} (pid {pid}) on CPUs "
                                         f"{sorted(got)}, placed on {sorted(cpus)}")

    def stop(self, proc: subprocess.Popen[bytes], grace: float = STOP_GRACE) -> int | None:
        """Stop a process started with ``spawn`` (SIGTERM, then SIGKILL after ``grace``)."""
        if proc.poll() is None:
            _kill_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid, signal.SIGKILL)
                proc.wait()
        for entry in list(self._procs):
            if entry[1] is proc:
                if entry[2]:
                    entry[2].close()
                self._procs.remove(entry)
        return proc.returncode

    # ---- build ----------------------------------------------------------------------
    def build(self, seed: int = 0) -> None:
        start = time.monotonic()
        ctx = PlanContext(run_dir=self.work_dir, tools=_resolve_tools(self.layer, self.topo),
                          features=kernel_features())
        builder = PlanBuilder()
        placements = self.layer.plan(self.topo, self.options, builder, ctx)
        plan_link_shaping(self.topo, builder, ctx, seed)
        self.plan = builder.build()
        self.state.namespaces = list(self.plan.namespaces)
        self.state.cgroup_prefix = self.prefix
        self.state.save()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._cgroups = CgroupSet(self.prefix)
        self.infra_cgroup = self._cgroups.create("infra", Resources())
        # Work that no link stage depends on overlaps the ip/bridge batches: the nodes'
        # cgroups, and the namespace-wide sysctls (joined before per-interface sysctls,
        # firewall and daemons, the first things that depend on them). Containers have
        # cgroups of their own, made by their engine.
        docker = self.layer.backend == "docker"
        if docker:
            from vnetbench.backends.docker.runtime import DockerRuntime

            self.runtime = DockerRuntime(self)
        nodes = submit_in_thread(lambda: [] if docker else [self._make_node(p) for p in placements])
        early: Future[dict[str, dict[str, str]]] | None = None
        try:
            for stage in self.plan.stages:
                try:
                    if stage.title == "early sysctls":
                        early = kernel.submit_sysctls(
                            [a for a in stage.actions if isinstance(a, Sysctls)])
                        continue
                    if early is not None and stage.title == "late sysctls":
                        self._record_sysctls(early.result())
                        early = None
                    self._apply_stage(stage.actions)
                except VnetbenchError as exc:
                    raise LabError(f"building the {self.layer.name} lab failed at stage "
                                   f"'{stage.title}': {exc}") from exc
        finally:
            # wait for the background work even if Ctrl-C lands now: teardown must not race it
            self.nodes = _wait_uninterrupted(nodes)
            if early is not None:
                self._record_sysctls(_wait_uninterrupted(early))
        if self.runtime is not None:
            try:
                self.nodes = self.runtime.start()
            except VnetbenchError as exc:
                raise LabError(f"building the {self.layer.name} lab failed at stage "
                               f"'containers': {exc}") from exc
        for node in self.nodes:
            node.cpus = self.placement.for_node(node.index)
        self.build_seconds = time.monotonic() - start

    def _record_sysctls(self, seen: dict[str, dict[str, str]]) -> None:
        for netns, values in seen.items():
            self.sysctls.setdefault(netns, {}).update(values)

    def _make_node(self, p: NodePlacement) -> Node:
        assert self._cgroups is not None
        cgroup = self._cgroups.create(f"n{p.index}", self.topo.resources)
        return Node(self, p.index, p.host, p.netns, p.ip, p.ifname, cgroup)

    def _apply_stage(self, actions: Sequence[Any]) -> None:
        """Sysctls from one thread; daemons in order; the rest on a small worker pool."""
        sysctls = [a for a in actions if isinstance(a, Sysctls)]
        if sysctls:
            self._record_sysctls(kernel.apply_sysctls(sysctls))
        for daemon in (a for a in actions if isinstance(a, Daemon)):
            self._start_daemon(daemon)  # each waits for readiness before the next
        rest = [a for a in actions if not isinstance(a, Sysctls | Daemon)]
        if len(rest) == 1:
            self._apply(rest[0])
        elif rest:
            with ThreadPoolExecutor(max_workers=min(PARALLEL, len(rest))) as pool:
                for future in [pool.submit(self._apply, a) for a in rest]:
                    future.result()

    def _apply(self, action: Any) -> None:
        if isinstance(action, IpBatch | TcBatch):
            kernel.apply_batch(action)
        elif isinstance(action, IptablesRestore):
            kernel.apply_iptables(action)
        elif isinstance(action, Command):
            kernel.apply_command(action)
        elif isinstance(action, WriteFile):
            kernel.apply_file(action)
        else:  # pragma: no cover - exhaustive
            raise LabError(f"unknown action {action!r}")

    def _start_daemon(self, d: Daemon) -> None:
        log = self.work_dir / f"{d.role.replace(' ', '-')}.log"
        infra = self.infra_cgroup.procs_files if self.infra_cgroup else ()
        proc = self.spawn_in(d.netns, d.argv, log=log, env=dict(d.env), cgroup_procs=infra,
                             cpus=self._daemon_cpus(d.netns))
        self._daemons[d.role] = proc
        deadline = time.monotonic() + READY_TIMEOUT
        while not _daemon_ready(d, log):
            if proc.poll() is not None:
                raise LabError(f"{d.role} exited with {proc.returncode} before it was ready: "
                               f"{_tail(log)}")
            if time.monotonic() > deadline:
                raise LabError(f"{d.role} not ready after {READY_TIMEOUT:.0f}s: {_tail(log)}")
            time.sleep(0.005)
        if d.then:
            kernel.apply_batch(IpBatch(d.netns, d.then))
        for argv in d.then_cmds:
            kernel.run_in(d.netns, argv)

    def _daemon_cpus(self, netns: str) -> tuple[int, ...] | None:
        """A daemon runs on its emulated host's CPU; the switch's on any placed CPU."""
        for h in range(self.topo.hosts):
            if netns == self.names.host_ns(h):
                return self.placement.for_host(h)
        return self.placement.for_switch()

    def daemon_logs(self) -> dict[str, str]:
        return {p.name: p.read_text(errors="replace") for p in self.work_dir.glob("*.log")}

    # ---- teardown -------------------------------------------------------------------
    def teardown(self) -> list[str]:
        """Remove everything of this run; returns problems met (never raises)."""
        problems: list[str] = []
        daemons = {id(p) for p in self._daemons.values()}
        # workload processes first (they may sit in containers' cgroups), then Docker's
        # containers and engines, then the lab's own daemons
        problems += self._stop_tracked(lambda p: id(p) not in daemons)
        if self.runtime is not None:
            try:
                problems += self.runtime.stop()
            except Exception as exc:
                problems.append(f"stopping Docker: {exc}")
        problems += self._stop_tracked(lambda p: True)
        problems += _kill_namespace_processes(self.state.namespaces)
        cgroups = self._cgroups or CgroupSet(self.prefix)
        problems += cgroups.kill_all()
        problems += _delete_namespaces(self.state.namespaces)
        problems += cgroups.remove()
        _remove_run_files(self.state)
        return problems

    def _stop_tracked(self, which: Callable[[subprocess.Popen[bytes]], bool]) -> list[str]:
        problems = []
        for _, proc, _ in reversed(list(self._procs)):
            if not which(proc):
                continue
            try:
                self.stop(proc)
            except Exception as exc:
                problems.append(f"stopping pid {proc.pid}: {exc}")
        return problems


SIGNALS_DEFERRED = {signal.SIGINT, signal.SIGTERM}


def _block_signals() -> bool:
    if threading.current_thread() is not threading.main_thread():
        return False
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS_DEFERRED)
    return True


def _unblock_signals(blocked: bool) -> None:
    if blocked:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS_DEFERRED)


def _wait_uninterrupted(future: Future[T]) -> T:
    """``future.result()``, finishing the wait if Ctrl-C arrives meanwhile (re-raised after)."""
    interrupted: BaseException | None = None
    while True:
        try:
            result = future.result()
            break
        except (KeyboardInterrupt, Terminated) as exc:
            interrupted = exc
    if interrupted is not None:
        raise interrupted
    return result


def _daemon_ready(d: Daemon, log: Path) -> bool:
    if d.ready.startswith("path:"):
        return os.path.exists(d.ready[5:])
    if d.ready == "stdout":
        try:
            text = log.read_text(errors="replace")
        except FileNotFoundError:
            return False
        for line in text.splitlines():
            with suppress(ValueError):
                if json.loads(line).get("event") == "ready":
                    return True
        return False
    return True


def _tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except FileNotFoundError:
        return "(no output)"


def _kill_namespace_processes(namespaces: Sequence[str]) -> list[str]:
    inodes = {ino for ns in namespaces if (ino := netns_inode(ns)) is not None}
    if not inodes:
        return []
    pids = pids_in_netns(inodes)
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if os.path.exists(f"/proc/{p}")]
        time.sleep(0.02)
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return [f"process {p} was still running inside the lab at teardown" for p in pids]


def _delete_namespaces(namespaces: Sequence[str]) -> list[str]:
    present = [ns for ns in namespaces if os.path.exists(f"/run/netns/{ns}")]
    if not present:
        return []
    proc = subprocess.run(["ip", "-force", "-batch", "-"],
                          input="".join(f"netns del {ns}\n" for ns in present),
                          capture_output=True, text=True, check=False)
    left = [ns for ns in present if os.path.exists(f"/run/netns/{ns}")]
    return [f"namespace {ns} could not be deleted: {proc.stderr.strip()}" for ns in left]


def _remove_run_files(state: RunState) -> None:
    for sock in Path("/var/run/wireguard").glob(f"vnb{state.short_id}*"):
        with suppress(OSError):
            sock.unlink()
    if state.work_dir:
        for path in sorted(Path(state.work_dir).glob("**/*"), reverse=True):
            with suppress(OSError):
                path.rmdir() if path.is_dir() else path.unlink()
        with suppress(OSError):
            Path(state.work_dir).rmdir()
    for data_dir in state.data_dirs:  # e.g. Hadoop's data_root/<run id>, if its cleanup failed
        if state.owns_data_dir(data_dir):
            shutil.rmtree(data_dir, ignore_errors=True)
    with suppress(FileNotFoundError):
        state.path.unlink()


def _resolve_tools(layer: Layer, topo: Topology) -> dict[str, str]:
    tools: dict[str, str] = {}
    wanted = list(layer.tools)
    if topo.link.needs_emulator:
        wanted.append("vnetbench-linkem")
    for name in wanted:
        if name.startswith("vnetbench-"):
            tools[name] = str(find_binary(name))
        elif name == "wg":
            tools["wg"] = kernel.which_or_raise("wg", "apt-get install wireguard-tools")
        elif name == "dockerd":
            from vnetbench.backends.docker.engine import find_dockerd

            tools["dockerd"] = find_dockerd()
    if layer.name == "wireguard" and not kernel_features().get("wireguard", False):
        tools["wireguard-go"] = find_wireguard_go()
    return tools


def check_layer_supported(layer: Layer) -> None:
    """UnsupportedError naming the missing kernel feature (MissingToolError for a missing
    Docker engine), before anything is built."""
    if layer.backend == "docker":
        from vnetbench.backends.docker.engine import find_dockerd

        find_dockerd()
    features = kernel_features()
    for feature in layer.requires:
        if not features.get(feature, False):
            raise UnsupportedError(
                f"layer {layer.name!r} needs the kernel feature {feature!r}, which this host "
                f"lacks ({FEATURE_ADVICE.get(feature, 'see vnetbench doctor')}); remove it "
                "from the scenario's layers or run on a kernel that has it"
            )


def require_root() -> None:
    if os.geteuid() != 0:
        raise PermissionError_("vnetbench builds namespaces and links: run it as root (sudo)")


@contextmanager
def open_lab(layer: str = "bridge", hosts: int = 1, nodes: int = 2, *,
             link: LinkShape | None = None, resources: Resources | None = None,
             layer_options: Mapping[str, Any] | None = None, seed: int = 0,
             services: Sequence[int] = (),
             placement: PlacementMode = "off", cpus: Sequence[int] | None = None,
             on_teardown_problem: Any = None) -> Iterator[Lab]:
    """Build a lab, yield it, and tear it down whatever happens.

    ``placement`` pins node processes and the hosts' daemons to CPUs (see ``placement``);
    ``cpus`` limits the CPUs used (default: all this process may use).
    """
    require_root()
    layer_obj = get_layer(layer)
    try:
        options = layer_obj.options.model_validate(dict(layer_options or {}))
    except Exception as exc:
        raise LabError(f"bad options for layer {layer!r}: {exc}") from exc
    check_layer_supported(layer_obj)
    state = allocate(WORK_ROOT)
    lab: Lab | None = None
    try:
        with terminate_raises():
            topo = Topology(hosts=hosts, nodes=nodes, names=Names(state.short_id),
                            addresses=Addresses(state.net), link=link or LinkShape(),
                            resources=resources or Resources())
            lab = Lab(topo, layer_obj, options, state, Path(state.work_dir),
                      services=tuple(sorted(set(services))),
                      placement=plan_placement(placement, [topo.host_of(j) for j in range(nodes)],
                                               tuple(cpus) if cpus else None))
            lab.build(seed)
            yield lab
    finally:
        # a signal during teardown is recorded, not lost: acted on once teardown is done
        with deferred() as pending:
            if lab is not None:
                problems = lab.teardown()
            else:
                _remove_run_files(state)
                problems = []
        for problem in problems:
            if on_teardown_problem:
                on_teardown_problem(problem)
            else:
                print(f"vnetbench: teardown: {problem}", file=sys.stderr)
        raise_pending(pending)
