"""A lab as data: the ordered stages of kernel changes that build it (pure, printable).

A layer never touches the kernel; it fills a ``PlanBuilder`` with what each namespace needs:
``ip -batch`` lines, sysctls, ``iptables-restore`` rules, ``tc -batch`` lines and daemons.
``PlanBuilder.build()`` turns that into a ``Plan``: stages that run one after another, each
holding actions that touch different namespaces and so run in parallel. ``vnetbench plan``
prints a plan; ``vnetbench.host.kernel`` applies one (the ``ip``/``bridge`` lines as netlink
requests where ``vnetbench.host.iplines`` understands them). Undo is implied and total: everything lives
in the run's namespaces, cgroups and processes, which teardown removes.

Stage order:
    files          keys and configs under the run's state directory
    namespaces     one root ``ip -batch`` of ``netns add``
    early sysctls  per namespace (ipv6 off, forwarding, rp_filter, bridge-nf-call-*)
    switch links   the underlay switch's batch (creates each host's underlay veth)
    host links     per host batch (bridges, node veths, macvlans, routes)
    node links     per node batch (addresses, routes)
    fdb            per host ``bridge -batch`` (VXLAN flood entries towards peer hosts)
    late sysctls   per-interface keys (proxy_arp on a given veth)
    firewall       per namespace ``iptables-restore``
    traffic        per namespace ``tc -batch`` (rate shaping)
    daemons        link emulator, wireguard-go, tunnel forwarders, each with a post-ready batch
    commands       one-off commands (``wg set`` on kernel WireGuard devices)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field


@dataclass(frozen=True)
class IpBatch:
    """``TOOL [-n NETNS] -batch -`` with these lines; TOOL is ``ip`` or ``bridge``."""

    netns: str | None
    lines: tuple[str, ...]
    tool: str = "ip"

    def describe(self) -> list[str]:
        where = self.netns or "root"
        return [f"{self.tool} -n {where} -batch:"] + [f"    {line}" for line in self.lines]


@dataclass(frozen=True)
class TcBatch:
    """``tc -n NETNS -batch -`` with these lines."""

    netns: str
    lines: tuple[str, ...]

    def describe(self) -> list[str]:
        return [f"tc -n {self.netns} -batch:"] + [f"    {line}" for line in self.lines]


@dataclass(frozen=True)
class Sysctls:
    """Write these keys (dotted, under /proc/sys) inside NETNS."""

    netns: str
    values: tuple[tuple[str, str], ...]

    def describe(self) -> list[str]:
        return [f"sysctl in {self.netns}:"] + [f"    {k} = {v}" for k, v in self.values]


@dataclass(frozen=True)
class IptablesRestore:
    """``iptables-restore`` of this text inside NETNS (a fresh namespace: no flush needed)."""

    netns: str
    rules: str

    def describe(self) -> list[str]:
        return [f"iptables-restore in {self.netns}:"] + [
            f"    {line}" for line in self.rules.splitlines()
        ]


@dataclass(frozen=True)
class Daemon:
    """A long-lived helper process inside NETNS (stopped at teardown).

    ``ready`` says how to know it is up: ``"stdout"`` waits for a JSON line whose ``event``
    is ``ready``; ``"path:<file>"`` waits for the file to exist. ``then`` is an ``ip -batch``
    run in the same namespace once it is ready (addresses on the device it created).
    """

    netns: str
    role: str
    argv: tuple[str, ...]
    ready: str
    env: tuple[tuple[str, str], ...] = ()
    then: tuple[str, ...] = ()
    then_cmds: tuple[tuple[str, ...], ...] = ()

    def describe(self) -> list[str]:
        lines = [f"daemon {self.role} in {self.netns}: {' '.join(self.argv)} (ready: {self.ready})"]
        lines += [f"    then ip: {line}" for line in self.then]
        lines += [f"    then: {' '.join(cmd)}" for cmd in self.then_cmds]
        return lines


@dataclass(frozen=True)
class WriteFile:
    """A file the lab needs (keys, configs) under the run's state directory."""

    path: str
    content: str
    secret: bool = False

    def describe(self) -> list[str]:
        shown = "<secret>" if self.secret else self.content.strip()
        return [f"write {self.path}: {shown}"]


@dataclass(frozen=True)
class Command:
    """One command run inside NETNS (for tools without a batch mode, e.g. ``wg set``)."""

    netns: str
    argv: tuple[str, ...]

    def describe(self) -> list[str]:
        return [f"in {self.netns}: {' '.join(self.argv)}"]


Action = IpBatch | TcBatch | Sysctls | IptablesRestore | Daemon | WriteFile | Command


@dataclass(frozen=True)
class Stage:
    """Actions that may run in parallel (each in its own namespace)."""

    title: str
    actions: tuple[Action, ...]


@dataclass(frozen=True)
class Plan:
    """What building a lab does, in order."""

    namespaces: tuple[str, ...]
    stages: tuple[Stage, ...]

    def render(self) -> str:
        out: list[str] = []
        for stage in self.stages:
            if not stage.actions:
                continue
            out.append(f"== {stage.title} ({len(stage.actions)} action(s))")
            for action in stage.actions:
                out.extend(action.describe())
        return "\n".join(out)

    def actions(self) -> list[Action]:
        return [a for s in self.stages for a in s.actions]


@dataclass
class PlanBuilder:
    """Collects what layers, shaping and the base topology want, per namespace."""

    namespaces: list[str] = field(default_factory=list)
    early_sysctls: dict[str, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    switch_lines: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    host_lines: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    node_lines: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    bridge_lines: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    late_sysctls: dict[str, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    firewall: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    traffic: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    daemons: list[Daemon] = field(default_factory=list)
    files: list[WriteFile] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)

    def add_namespace(self, name: str) -> None:
        if name in self.namespaces:
            raise ValueError(f"namespace {name} planned twice")
        self.namespaces.append(name)

    def sysctl(self, netns: str, key: str, value: str | int, *, late: bool = False) -> None:
        (self.late_sysctls if late else self.early_sysctls)[netns][key] = str(value)

    def build(self) -> Plan:
        def batches(lines: dict[str, list[str]]) -> tuple[Action, ...]:
            return tuple(IpBatch(ns, tuple(ls)) for ns, ls in lines.items() if ls)

        def sysctls(values: dict[str, dict[str, str]]) -> tuple[Action, ...]:
            return tuple(
                Sysctls(ns, tuple(sorted(kv.items()))) for ns, kv in values.items() if kv
            )

        create = IpBatch(None, tuple(f"netns add {ns}" for ns in self.namespaces))
        stages = (
            Stage("files", tuple(self.files)),
            Stage("namespaces", (create,)),
            Stage("early sysctls", sysctls(self.early_sysctls)),
            Stage("switch links", batches(self.switch_lines)),
            Stage("host links", batches(self.host_lines)),
            Stage("node links", batches(self.node_lines)),
            Stage(
                "forwarding tables",
                tuple(IpBatch(ns, tuple(ls), "bridge") for ns, ls in self.bridge_lines.items()),
            ),
            Stage("late sysctls", sysctls(self.late_sysctls)),
            Stage(
                "firewall",
                tuple(
                    IptablesRestore(ns, "\n".join(rules) + "\n")
                    for ns, rules in self.firewall.items()
                    if rules
                ),
            ),
            Stage(
                "traffic control",
                tuple(TcBatch(ns, tuple(ls)) for ns, ls in self.traffic.items() if ls),
            ),
            Stage("daemons", tuple(self.daemons)),
            Stage("commands", tuple(self.commands)),
        )
        return Plan(tuple(self.namespaces), stages)
