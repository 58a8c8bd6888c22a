"""The ``machines`` backend: a lab whose hosts are real machines reached over OpenSSH.

A scenario names its hosts (``hosts: [{ssh: root@192.0.2.10, underlay: eth1}, ...]``);
every namespace layer then builds across them as it does across emulated hosts, with host
``i``'s namespace being machine ``i``'s own and its underlay the machine's interface (the
plan is made with ``host_kind = "machine"``). Nothing is applied on this host: each
machine's part of the plan becomes one build script (``remote.scripts``) run over the
machine's multiplexed SSH connection, after its teardown script has been written there.

Before anything is built: every machine is checked (``remote.checks``: root, kernel
features the layer needs, tools, the underlay's address, MTU, speed, offloads, the clock
offset), the lab's address range is checked against every machine's routes, and
vnetbench's own programs (the probe, the layer's helpers) are copied to the run's directory
on each machine, checked by hash. Nodes are ``MachineNode``s; the evidence (CPU, devices,
TCP) is read on each machine and labelled with it (``remote.evidence``); daemon logs are
fetched into the run's work directory before the machines are cleaned.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from vnetbench.backends.base import Backend, BackendPlan, LabContext
from vnetbench.backends.docker.modes import DockerLayer, DockerOptions
from vnetbench.backends.docker.steps import Phase, build_phases, describe_phases
from vnetbench.backends.machines.checks import MachineFacts, check_machines
from vnetbench.backends.machines.docker import (
    MachineDocker,
    attached_namespaces,
    check_machine_layer,
    engine_problems,
    teardown_lines,
)
from vnetbench.backends.machines.node import MachineNode
from vnetbench.backends.machines.scripts import (
    CONTROLLER,
    STAGE_MARK,
    MachineScripts,
    machine_scripts,
    remote_dir,
)
from vnetbench.backends.machines.ssh import SshConnection
from vnetbench.collectors.base import Collector
from vnetbench.errors import (
    AddressError,
    CommandError,
    LabError,
    UnsupportedError,
    VnetbenchError,
)
from vnetbench.host.binaries import find_binary
from vnetbench.host.cleaned import CleanResult
from vnetbench.host.identity import controller_mark
from vnetbench.host.node import Node
from vnetbench.host.state import RunState
from vnetbench.lab.plan import Plan
from vnetbench.lab.spec import LabSpec, MachineSpec
from vnetbench.lab.topology import Addresses, Names, Topology
from vnetbench.layers.base import AnyLayer, LayerOptions, NodePlacement, PlanContext

BASE_TOOLS = ("ip", "sysctl", "sh", "setsid", "cat", "kill")
"""What every build and teardown script runs on a machine."""
DEPLOYED = ("vnetbench-probe", "vnetbench-linkem", "vnetbench-tunnel", "wireguard-go")
"""Programs copied to the machines (vnetbench's own, and the wireguard-go it built)."""
BUILD_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class MachinesPlan(BackendPlan):
    """Each machine's build and teardown scripts."""

    scripts: tuple[MachineScripts, ...] = ()
    underlays: tuple[str, ...] = ()
    docker: tuple[Phase, ...] = ()
    """The docker commands run on the machines' own engines (``docker-*`` layers)."""

    def describe(self) -> list[str]:
        out = []
        for i, (s, underlay) in enumerate(zip(self.scripts, self.underlays, strict=True)):
            out.append(f"== machine h{i} (underlay {underlay}): build script")
            out += [f"    {line}" for line in s.build.splitlines()]
        return out + describe_phases(self.docker)


@dataclass
class Machines:
    """The connected, checked machines of one lab."""

    specs: tuple[MachineSpec, ...]
    conns: list[SshConnection]
    facts: list[MachineFacts]
    programs: dict[str, str] = field(default_factory=dict)
    """Local path of a deployed program -> its path on the machines."""
    tools: dict[str, str] = field(default_factory=dict)
    """Tool name -> its path on the machines, for the plan."""

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


def connect(specs: Sequence[MachineSpec], control_dir: Path, layer: AnyLayer,
            local_tools: dict[str, str]) -> Machines:
    """Check and connect every machine; UnsupportedError with a line per problem."""
    control_dir.mkdir(parents=True, exist_ok=True)
    system = [name for name in local_tools if name not in DEPLOYED
              and not name.startswith("vnetbench-")]
    conns, facts = check_machines(specs, control_dir, need_features=layer.requires,
                                  need_tools=[*BASE_TOOLS, *system])
    machines = Machines(tuple(specs), conns, facts)
    problems = engine_problems(specs, conns) if isinstance(layer, DockerLayer) else []
    if problems:
        machines.close()
        raise UnsupportedError("\n".join(problems))
    for name in system:  # the same on every machine, or each one's own path
        paths = {f.tools.get(name) for f in facts}
        only = paths.pop() if len(paths) == 1 else None
        machines.tools[name] = only or name
    return machines


ROUTE_TYPES = {"unicast", "local", "broadcast", "multicast", "anycast", "unreachable",
               "blackhole", "prohibit", "throw", "nat"}


def preflight(specs: Sequence[MachineSpec], layers: Sequence[AnyLayer]) -> None:
    """Check the machines for every layer of a run before its first trial (UnsupportedError
    with a line per problem); leaves nothing on them."""
    import tempfile
    features = list(dict.fromkeys(f for layer in layers for f in layer.requires))
    tools = list(dict.fromkeys(p.name for layer in layers for p in layer.programs
                               if p.name not in DEPLOYED and not p.name.startswith("vnetbench-")))
    docker = any(isinstance(layer, DockerLayer) for layer in layers)
    with tempfile.TemporaryDirectory(prefix="vnb-ssh-") as control:
        conns, _ = check_machines(specs, Path(control), need_features=features,
                                  need_tools=[*BASE_TOOLS, *tools, *(["docker"] if docker else [])])
        try:
            problems = engine_problems(specs, conns) if docker else []
        finally:
            for conn in conns:
                conn.close()
    if problems:
        raise UnsupportedError("\n".join(problems))


def route_destination(route: str) -> str | None:
    """The destination of an ``ip -4 -o route`` line (None: the default route, or none)."""
    words = route.split()
    if words and words[0] in ROUTE_TYPES:
        words = words[1:]
    if not words or words[0] == "default":
        return None
    return words[0] if "/" in words[0] else f"{words[0]}/32"


def check_addresses(machines: Machines, base: str) -> None:
    """AddressError when the lab's range overlaps a route of a machine."""
    net = ipaddress.ip_network(base)
    for facts in machines.facts:
        for route in facts.routes:
            dest = route_destination(route)
            try:
                other = ipaddress.ip_network(dest, strict=False) if dest else None
            except ValueError:
                continue
            if other is not None and net.overlaps(other):
                raise AddressError(f"host {facts.target}: its route {route.strip()!r} overlaps "
                                   f"the lab's range {base}; run again (another range is "
                                   "chosen) or remove that route")


def deploy(machines: Machines, prefix: str, wanted: dict[str, str]) -> None:
    """Copy vnetbench's programs (and those ``wanted`` that it built) to every machine,
    checked by hash; fills ``machines.programs`` and the plan's tool paths."""
    bin_dir = f"{remote_dir(prefix)}/bin"
    local: dict[str, Path] = {"vnetbench-probe": find_binary("vnetbench-probe")}
    for name, given in wanted.items():
        if name in DEPLOYED or name.startswith("vnetbench-"):
            local[name] = Path(given)
    for name, program in local.items():
        remote = f"{bin_dir}/{name}"
        for conn in machines.conns:  # one after the other: machines may share a disk
            conn.put(program, remote, 0o755)
        machines.programs[str(program)] = remote
        machines.tools[name] = remote


class MachinesBackend(Backend):
    """Hosts are real machines over SSH; nodes are namespaces on them."""

    name = "machines"
    host_kind = "machine"

    def __init__(self, machines: Machines | None = None) -> None:
        self.machines = machines
        self.prefix: str | None = None
        self.docker: MachineDocker | None = None

    @classmethod
    def check(cls, layer: AnyLayer) -> None:
        if layer.publishes_ports:
            raise UnsupportedError(f"layer {layer.name!r} needs firewall rules in the machines' "
                                   "own namespaces, which a lab on real machines does not "
                                   "change: leave it out on machines")
        if isinstance(layer, DockerLayer):
            check_machine_layer(layer)
        elif layer.backend != "netns":
            raise UnsupportedError(f"layer {layer.name!r} cannot run on machines over SSH yet "
                                   "(namespace layers can: host, bridge, routed, vxlan, "
                                   "wireguard, macvlan, userspace; and docker-host, "
                                   "docker-userbridge, docker-macvlan on the machines' engines)")

    def prepare(self, spec: LabSpec, state: RunState, layer: AnyLayer) -> tuple[Topology, PlanContext]:
        """Check, connect and equip the machines (recorded first, so ``clean`` can reach
        them); the lab's topology on their underlays and the plan's context."""
        machines = spec.machines
        if spec.hosts != len(machines):
            raise LabError(f"{spec.hosts} hosts asked for, {len(machines)} machines given")
        if spec.link.is_shaped or spec.resources.any:
            raise UnsupportedError("a lab on real machines takes neither link shaping (the wire "
                                   "between machines is real) nor per-node resources yet: remove "
                                   "link and resources from the scenario")
        state.machines = [asdict(m) for m in machines]
        state.save()
        work = Path(state.work_dir)
        work.mkdir(parents=True, exist_ok=True)
        names = Names(state.short_id)
        probe = Topology(hosts=spec.hosts, nodes=spec.nodes, names=names,
                         addresses=Addresses(state.net))
        wanted = layer.resolve_machine_tools(probe)
        m = connect(machines, work / "ssh", layer, wanted)
        self.machines = m
        check_addresses(m, Addresses(state.net).base)
        deploy(m, names.prefix, wanted)
        topo = Topology(
            hosts=spec.hosts, nodes=spec.nodes,
            names=Names(state.short_id, machine_underlays=tuple(f.underlay for f in m.facts)),
            addresses=Addresses(state.net,
                                machine_addresses=tuple(str(f.address) for f in m.facts)),
            link=spec.link, resources=spec.resources)
        features = {k: all(f.features.get(k, False) for f in m.facts)
                    for k in m.facts[0].features} if m.facts else {}
        ctx = PlanContext(run_dir=Path(remote_dir(names.prefix)), tools=dict(m.tools),
                          features=features)
        return topo, ctx

    @classmethod
    def dry_context(cls, spec: LabSpec, layer: AnyLayer, short_id: str, net: str
                    ) -> tuple[Topology, PlanContext]:
        """The machines' interfaces, their addresses as found when the run connects."""
        topo = Topology(hosts=spec.hosts, nodes=spec.nodes,
                        names=Names(short_id, machine_underlays=tuple(
                            m.underlay for m in spec.machines)),
                        addresses=Addresses(net, machine_addresses=tuple(
                            f"<{m.underlay} address of {m.ssh}>" for m in spec.machines)),
                        link=spec.link, resources=spec.resources)
        return topo, PlanContext(run_dir=Path(remote_dir(f"vnb{short_id}")))

    @classmethod
    def plan(cls, topo: Topology, layer: AnyLayer, options: LayerOptions, ctx: PlanContext,
             placements: tuple[NodePlacement, ...], services: tuple[int, ...],
             kernel: Plan) -> BackendPlan:
        underlays = tuple(topo.names.underlay(i) for i in range(topo.hosts))
        if not isinstance(layer, DockerLayer):
            scripts = machine_scripts(topo, kernel, where=f"layer {layer.name}")
            return MachinesPlan(tuple(scripts[i] for i in range(topo.hosts)), underlays)
        if not isinstance(options, DockerOptions):
            raise LabError(f"layer {layer.name} was handed options of another layer")
        first = teardown_lines(topo, layer)
        scripts = machine_scripts(topo, kernel, where=f"layer {layer.name}",
                                  teardown_first={i: first for i in range(topo.hosts)},
                                  attached=attached_namespaces(topo, layer))
        rootfs = Path(remote_dir(topo.names.prefix)) / "node-rootfs.tar"
        phases = build_phases(topo, layer.mode, options, services, topo.resources, rootfs)
        return MachinesPlan(tuple(scripts[i] for i in range(topo.hosts)), underlays,
                            tuple(phases))

    @classmethod
    def local_kernel(cls, kernel: Plan, backend_plan: BackendPlan) -> Plan:
        return Plan((), ())

    def _machines(self) -> Machines:
        if self.machines is None:
            raise LabError("the machines backend has no connected machines")
        return self.machines

    @classmethod
    def preflight_lab(cls, spec: LabSpec, layers: Sequence[tuple[AnyLayer, LayerOptions]],
                      *, launches: bool = False) -> None:
        """Every machine of ``spec`` checked for all the layers at once (``preflight``)."""
        preflight(spec.machines, [layer for layer, _ in layers])

    def collectors(self, nodes: list[Node]) -> list[Collector] | None:
        """Read where the nodes are: each machine's counters over its connection."""
        from vnetbench.backends.machines.evidence import machine_collectors

        if self.prefix is None or self.machines is None:
            return None
        return machine_collectors(nodes, self.prefix, [f.underlay for f in self.machines.facts])

    def realise(self, lab: LabContext) -> list[Node]:
        m = self._machines()
        plan = lab.plan.backend
        if not isinstance(plan, MachinesPlan):
            raise LabError("the machines backend was handed a plan of another backend")
        self.prefix = lab.topo.names.prefix
        d = remote_dir(self.prefix)
        for i, (conn, s) in enumerate(zip(m.conns, plan.scripts, strict=True)):
            conn.put_text(f"{d}/{CONTROLLER}", controller_mark() + "\n", 0o644)
            conn.put_text(f"{d}/teardown-h{i}.sh", s.teardown, 0o700)
        with ThreadPoolExecutor(max_workers=len(m.conns)) as pool:
            futures = [pool.submit(self._build, i, conn, s.build)
                       for i, (conn, s) in enumerate(zip(m.conns, plan.scripts, strict=True))]
            errors = [str(e) for f in futures if (e := f.exception()) is not None]
        if errors:
            raise LabError("; ".join(errors))
        layer = lab.plan.layer
        if isinstance(layer, DockerLayer):
            self.docker = MachineDocker(m.conns, lab.topo, layer, plan.docker, d)
            try:
                return self.docker.start(lab.tracker, m.programs)
            except VnetbenchError as exc:
                raise LabError(f"building the {layer.name} lab failed at stage 'containers': "
                               f"{exc}") from exc
        nodes: list[Node] = []
        hosts = {lab.topo.names.host_ns(i) for i in range(lab.topo.hosts)}
        for p in lab.plan.placements:
            conn = m.conns[p.host]
            nodes.append(MachineNode(
                p.index, p.host, None, p.ip, p.ifname, None, conn=conn, tracker=lab.tracker,
                machine_netns=None if p.netns in hosts else p.netns,
                pid_file=f"{d}/pids-h{p.host}", remote_dir=d, programs=m.programs,
                machine=conn.target))
        return nodes

    def _build(self, i: int, conn: SshConnection, script: str) -> None:
        try:
            conn.run_script(script, timeout=BUILD_TIMEOUT_S)
        except CommandError as exc:
            stage, tail = "start", list[str]()
            for line in exc.stderr.splitlines():
                if line.startswith(STAGE_MARK):
                    stage, tail = line.removeprefix(STAGE_MARK), []
                else:
                    tail.append(line.strip())
            raise LabError(f"building on host {conn.target} (h{i}) failed at stage '{stage}': "
                           f"{' | '.join(tail[-3:]) or f'exit {exc.returncode}'}") from exc

    def facts(self) -> dict[str, object]:
        if self.machines is None:
            return {}
        facts: dict[str, object] = {"machines": [f.to_json() for f in self.machines.facts]}
        if self.docker is not None:
            facts["docker"] = self.docker.facts
        return facts

    def save_logs(self, raw_dir: Path) -> None:
        """The machines' daemon logs of this run into ``raw/machines/h<i>/``."""
        if self.machines is None or self.prefix is None:
            return
        for i, conn in enumerate(self.machines.conns):
            fetch_logs(conn, remote_dir(self.prefix), i, raw_dir / "machines" / f"h{i}")

    def stop(self, lab: LabContext) -> list[str]:
        if self.machines is None:
            return []
        problems: list[str] = []
        if self.docker is not None:
            problems += self.docker.stop()
        plan = lab.plan.backend
        scripts = plan.scripts if isinstance(plan, MachinesPlan) else ()
        for i, conn in enumerate(self.machines.conns):
            if i < len(scripts):
                try:
                    got = conn.run_script(scripts[i].teardown, timeout=60.0, check=False)
                    problems += [f"host {conn.target}: {line}"
                                 for line in got.stderr.splitlines() if line.strip()]
                except LabError as exc:
                    problems.append(f"host {conn.target}: teardown: {exc} (run `vnetbench "
                                    f"clean --host {conn.target}`)")
        self.machines.close()
        return problems

    @classmethod
    def clean_leftovers(cls, state: RunState) -> CleanResult:
        if not state.machines:
            return CleanResult()
        from vnetbench.backends.machines.cleanup import clean_machines
        return clean_machines([MachineSpec(**spec) for spec in state.machines],
                              only=f"vnb{state.short_id}")


def fetch_logs(conn: SshConnection, d: str, i: int, into: Path) -> None:
    """Copy machine ``i``'s daemon logs of this run into the directory ``into``."""
    got = conn.run(["sh", "-c", f"for f in {d}/*-h{i}.log; do [ -f \"$f\" ] && "
                   "{ echo \"@@log $f\"; cat \"$f\"; }; done; true"], check=False, timeout=30.0)
    name: str | None = None
    lines: list[str] = []
    out: dict[str, list[str]] = {}
    for line in got.stdout.splitlines():
        if line.startswith("@@log "):
            name = Path(line[6:]).name
            out[name] = lines = []
        elif name is not None:
            lines.append(line)
    if out:
        into.mkdir(parents=True, exist_ok=True)
    for fname, text in out.items():
        (into / fname).write_text("\n".join(text) + "\n")
