"""A lab's kernel plan as shell scripts for real machines: one build script and one teardown
script per machine (pure: ``vnetbench plan`` prints them, the unit tests read them).

The plan is the one every backend applies (``vnetbench.lab.plan``), made with
``host_kind = "machine"``: host ``i``'s namespace is machine ``i``'s own, its underlay the
machine's interface. Each action goes to the machine that owns its namespace (a host's own,
or a node's, ``vnb<id>-n<j>`` on the node's host) in plan order; the whole build of one
machine is one ``sh -s`` over its SSH connection. What a real machine must not be given is
refused when planned: firewall rules or traffic control in a machine's own namespace (NAT,
shaping; the wire between real machines is real).

What a build leaves on a machine is exactly what its teardown removes, and both are
written down before anything is built (``teardown-h<i>.sh`` in the run's directory there,
which ``vnetbench clean --host`` runs after a killed run):

- processes: those the build and the workloads start (their PIDs in ``pids-h<i>``, each with
  its start time and the machine's boot id: a PID reused since, or after a reboot, is left
  alone) and any process inside the run's namespaces;
- routes added in the machine's own tables (``route add`` lines of the host's batches; those
  through the run's devices go with the devices);
- links named ``vnb<id>...`` in the machine's namespace, and the run's namespaces;
- sysctls of the machine's own namespace, restored to the values recorded before the first
  write (``sysctls-h<i>``; keys naming the run's own devices go with the devices): a run
  that finds another run of the machine holding a key records that run's original value,
  and a run restores a key only when no other run still holds it, so two runs ending in
  either order leave the machine's own value;
- files: the run's directory on the machine (deployed programs, keys, logs), WireGuard
  sockets of the run's devices.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vnetbench.backends.machines.ssh import WORK_ROOT
from vnetbench.errors import UnsupportedError
from vnetbench.lab.plan import (
    Command,
    Daemon,
    IpBatch,
    IptablesRestore,
    Plan,
    Sysctls,
    TcBatch,
    WriteFile,
)
from vnetbench.lab.topology import Topology

REMOTE_ROOT = WORK_ROOT
"""Where a run keeps its files on a machine: ``<root>/vnb<id>/`` (checked before every
write, ``ssh.trusted_root``)."""
READY_TIMEOUT_S = 15
STAGE_MARK = "@@vnetbench-stage "
"""Printed on stderr before each stage, so a failure names its stage."""


CONTROLLER = "controller"
"""In a run's directory on a machine: ``<hostname> <machine hash>`` of the machine that
started the run (``identity.controller_mark``); ``clean --host`` from another leaves it."""


def remote_dir(prefix: str) -> str:
    """The run's directory on every machine."""
    return f"{REMOTE_ROOT}/{prefix}"


START_TIME = "$(sed 's/^.*) //' /proc/{pid}/stat 2>/dev/null | cut -d' ' -f20)"
"""Shell: the start time of process ``{pid}`` since boot (field 22 of its stat, counted after
the command name, which may hold spaces)."""
BOOT_ID = "$(cat /proc/sys/kernel/random/boot_id)"


def record_pid(pid: str, pid_file: str) -> str:
    """Shell: append ``pid start-time boot-id`` of process ``pid`` (``$!``, ``$$``) to
    ``pid_file``, so a teardown kills it only while it is the same process of the same boot
    (``kill_recorded``), never a PID reused after it ended or after a reboot."""
    start = START_TIME.format(pid=pid)
    return f"echo \"{pid} {start} {BOOT_ID}\" >> {shlex.quote(pid_file)}"


def record_sysctl(key: str, record: str, root: str = REMOTE_ROOT) -> str:
    """Shell: note the value of the machine's sysctl ``key`` before this run first writes it
    (in ``record``, a ``sysctls-h<i>`` file): the value another run of this machine that
    still holds the key recorded, when there is one (the machine's own value, which that
    run will put back), else the current one."""
    q = shlex.quote(key)
    return (f"grep -q '^{key}=' {record} 2>/dev/null || {{ "
            f"held=$(grep -h '^{key}=' {root}/vnb*/sysctls-h* 2>/dev/null | head -n 1); "
            f"if [ -n \"$held\" ]; then echo \"$held\" >> {record}; "
            f"else echo {q}=\"$(sysctl -n {q})\" >> {record}; fi; }}")


def restore_sysctls(record: str, root: str = REMOTE_ROOT) -> str:
    """Shell: put back each sysctl of ``record`` unless another run of this machine still
    holds it (its own record names the key): the last run to let go restores the machine's
    value, whatever order the runs end in."""
    return (f"if [ -f {record} ]; then while IFS= read -r kv; do key=${{kv%%=*}}; "
            f"others=$(grep -l \"^$key=\" {root}/vnb*/sysctls-h* 2>/dev/null "
            f"| grep -v -x -F {record}); "
            "if [ -n \"$others\" ]; then echo \"left $key to another run still using it\"; "
            "continue; fi; "
            "sysctl -q -w \"$kv\" >/dev/null || echo \"could not restore $kv\" >&2; "
            f"done < {record}; fi")


def kill_recorded(pid_file: str, namespaces: str) -> list[str]:
    """Shell lines: stop the processes recorded in ``pid_file`` that are still the ones
    recorded (same start time, same boot; a line without both is not trusted) and every
    process inside ``namespaces`` (a quoted, space-separated list, maybe empty)."""
    start = START_TIME.format(pid="$p")
    return [
        f"boot={BOOT_ID}; pids=",
        f"if [ -f {pid_file} ]; then while read -r p s b; do "
        "case \"$p\" in ''|*[!0-9]*) continue;; esac; "
        "[ -n \"$s\" ] && [ \"$b\" = \"$boot\" ] || continue; "
        f"[ \"{start}\" = \"$s\" ] || continue; "
        f"pids=\"$pids $p\"; done < {pid_file}; fi",
        f"for ns in {namespaces}; do [ -e /run/netns/$ns ] && pids=\"$pids $(ip netns pids $ns)\"; done"
        if namespaces else "true",
        "for p in $pids; do kill -TERM \"$p\" 2>/dev/null; done",
        "n=0; while [ $n -lt 40 ]; do alive=; for p in $pids; do kill -0 \"$p\" 2>/dev/null "
        "&& alive=1; done; [ -z \"$alive\" ] && break; n=$((n+1)); sleep 0.05; done",
        "for p in $pids; do kill -KILL \"$p\" 2>/dev/null; done",
    ]


@dataclass(frozen=True)
class MachineScripts:
    """What building and removing a lab does on one machine."""

    build: str
    teardown: str
    namespaces: tuple[str, ...]


def owners(topo: Topology) -> dict[str, int]:
    """Namespace name -> the machine that holds it (hosts' own and nodes')."""
    owner = {topo.names.host_ns(i): i for i in range(topo.hosts)}
    owner |= {topo.names.node_ns(j): topo.host_of(j) for j in range(topo.nodes)}
    return owner


def heredoc(text: str, tag: str = "VNB_EOF") -> str:
    """``<<'TAG'`` followed by ``text`` (a tag the text does not hold)."""
    while tag in text:
        tag += "_"
    body = text if text.endswith("\n") else text + "\n"
    return f"<<'{tag}'\n{body}{tag}"


class ScriptWriter:
    """Turns the plan's actions for one machine into shell lines."""

    def __init__(self, topo: Topology, machine: int, programs: Mapping[str, str]) -> None:
        self.topo = topo
        self.machine = machine
        self.own = topo.names.host_ns(machine)
        self.dir = remote_dir(topo.names.prefix)
        self.programs = programs
        self.lines: list[str] = []
        self.recorded: set[str] = set()

    def files(self, suffix: str) -> str:
        return f"{self.dir}/{suffix}-h{self.machine}"

    def program(self, argv: Sequence[str]) -> list[str]:
        return [self.programs.get(argv[0], argv[0]), *argv[1:]]

    def inside(self, netns: str) -> list[str]:
        return [] if netns == self.own else ["ip", "netns", "exec", netns]

    def stage(self, title: str) -> None:
        self.lines.append(f"echo {shlex.quote(STAGE_MARK + title)} >&2")

    def action(self, action: object, *, where: str) -> None:
        if isinstance(action, WriteFile):
            self.lines += [f"mkdir -p {shlex.quote(action.path.rsplit('/', 1)[0] or '/')}",
                           f"cat > {shlex.quote(action.path)} {heredoc(action.content)}"]
        elif isinstance(action, IpBatch):
            target = [] if action.netns in (None, self.own) else ["-n", action.netns or ""]
            self.lines.append(f"{shlex.join([action.tool, *target, '-batch', '-'])} "
                              f"{heredoc(chr(10).join(action.lines))}")
        elif isinstance(action, Sysctls):
            self.sysctls(action)
        elif isinstance(action, TcBatch | IptablesRestore):
            if action.netns == self.own:
                raise UnsupportedError(
                    f"{where} needs {'traffic control' if isinstance(action, TcBatch) else 'firewall rules'}"
                    f" in machine {self.machine}'s own namespace, which a lab on real machines "
                    "does not change: use a layer without NAT or shaping on machines")
            if isinstance(action, TcBatch):
                self.lines.append(f"tc -n {shlex.quote(action.netns)} -batch - "
                                  f"{heredoc(chr(10).join(action.lines))}")
            else:
                self.lines.append(f"{shlex.join(self.inside(action.netns))} iptables-restore "
                                  f"{heredoc(action.rules)}")
        elif isinstance(action, Daemon):
            self.daemon(action)
        elif isinstance(action, Command):
            self.lines.append(shlex.join([*self.inside(action.netns), *self.program(action.argv)]))
        else:  # pragma: no cover - exhaustive
            raise UnsupportedError(f"{where}: {type(action).__name__} cannot run on a machine")

    def sysctls(self, action: Sysctls) -> None:
        prefix = self.topo.names.prefix
        if action.netns != self.own:
            values = [f"{k}={v}" for k, v in action.values]
            self.lines.append(shlex.join([*self.inside(action.netns), "sysctl", "-q", "-w",
                                          *values]))
            return
        record = self.files("sysctls")
        for key, value in action.values:
            if key.startswith("net.bridge.") and "br_netfilter" not in self.recorded:
                self.recorded.add("br_netfilter")
                self.lines.append("modprobe -q br_netfilter 2>/dev/null || true")
            if prefix not in key and key not in self.recorded:
                self.recorded.add(key)
                self.lines.append(record_sysctl(key, record))
            self.lines.append(shlex.join(["sysctl", "-q", "-w", f"{key}={value}"]))

    def daemon(self, d: Daemon) -> None:
        log = f"{self.dir}/{d.role.replace(' ', '-')}-h{self.machine}.log"
        env = ["env", *(f"{k}={v}" for k, v in d.env)] if d.env else []
        argv = [*self.inside(d.netns), "setsid", *env, *self.program(d.argv)]
        self.lines.append(f"{shlex.join(argv)} > {shlex.quote(log)} 2>&1 < /dev/null & "
                          + record_pid("$!", self.files("pids")))
        if d.ready.startswith("path:"):
            test = f"[ -e {shlex.quote(d.ready[5:])} ]"
        elif d.ready == "stdout":
            test = f"grep -q '\"event\": *\"ready\"' {shlex.quote(log)}"
        else:
            test = "true"
        role = shlex.quote(d.role)
        self.lines.append(
            f"n=0; until {test}; do n=$((n+1)); if [ $n -gt {READY_TIMEOUT_S * 100} ]; then "
            f"echo {role}' not ready after {READY_TIMEOUT_S}s:' >&2; tail -n 5 {shlex.quote(log)} "
            ">&2; exit 1; fi; sleep 0.01; done")
        if d.then:
            self.action(IpBatch(d.netns, d.then), where=d.role)
        for cmd in d.then_cmds:
            self.action(Command(d.netns, cmd), where=d.role)


def machine_scripts(topo: Topology, plan: Plan, programs: Mapping[str, str] | None = None,
                    where: str = "the lab", *,
                    teardown_first: Mapping[int, Sequence[str]] | None = None,
                    attached: Mapping[int, Sequence[str]] | None = None,
                    ) -> dict[int, MachineScripts]:
    """Each machine's build and teardown scripts (``programs``: a program the plan names ->
    its path on the machines); UnsupportedError for what a real machine must not be given.

    ``teardown_first``: shell lines a machine's teardown runs before anything else (a
    backend's own objects there, such as Docker's containers); ``attached``: namespaces the
    lab names on a machine without the plan making them (a container's, attached as
    ``vnb<id>-n<j>``), whose processes and names teardown removes like the plan's."""
    owner = owners(topo)
    writers = {i: ScriptWriter(topo, i, programs or {}) for i in range(topo.hosts)}
    namespaces: dict[int, list[str]] = {i: [] for i in range(topo.hosts)}
    routes: dict[int, list[str]] = {i: [] for i in range(topo.hosts)}
    for w in writers.values():
        w.lines += ["set -eu", "umask 077", f"mkdir -p {w.dir}"]
    for stage in plan.stages:
        for w in writers.values():
            w.stage(stage.title)
        for action in stage.actions:
            if isinstance(action, WriteFile):
                for i in _machines_using(action.path, plan, owner) or range(topo.hosts):
                    writers[i].action(action, where=where)
                continue
            if isinstance(action, IpBatch) and action.netns is None:
                per: dict[int, list[str]] = {}
                for line in action.lines:
                    words = line.split()
                    ns = words[2] if words[:2] == ["netns", "add"] else None
                    if ns is None or ns not in owner:
                        raise UnsupportedError(f"{where}: `ip {line}` has no machine to run on")
                    per.setdefault(owner[ns], []).append(line)
                    namespaces[owner[ns]].append(ns)
                for i, lines in per.items():
                    writers[i].action(IpBatch(None, tuple(lines), action.tool), where=where)
                continue
            ns = getattr(action, "netns", None)
            if ns not in owner:
                raise UnsupportedError(f"{where}: the plan touches {ns!r}, which is on no "
                                       "machine (a lab on machines has no switch namespace)")
            i = owner[ns]
            if isinstance(action, IpBatch) and ns == topo.names.host_ns(i):
                routes[i] += [line for line in action.lines if line.startswith("route add ")]
            writers[i].action(action, where=where)
    for i, names in (attached or {}).items():
        namespaces[i] += [ns for ns in names if ns not in namespaces[i]]
    return {i: MachineScripts("\n".join(w.lines) + "\n",
                              teardown_script(topo, i, namespaces[i], routes[i],
                                              first=(teardown_first or {}).get(i, ())),
                              tuple(namespaces[i]))
            for i, w in writers.items()}


def _machines_using(path: str, plan: Plan, owner: Mapping[str, int]) -> list[int]:
    """The machines whose commands or daemons name ``path`` (a key file goes only there)."""
    found = []
    for action in plan.actions():
        argvs: list[Sequence[str]] = []
        if isinstance(action, Command):
            argvs = [action.argv]
        elif isinstance(action, Daemon):
            argvs = [action.argv, *action.then_cmds]
        ns = getattr(action, "netns", None)
        if (isinstance(ns, str) and ns in owner and any(path in argv for argv in argvs)
                and owner[ns] not in found):
            found.append(owner[ns])
    return found


def teardown_script(topo: Topology, machine: int, namespaces: Sequence[str],
                    routes: Sequence[str], first: Sequence[str] = ()) -> str:
    """Remove what the build of ``machine`` may have left (see the module docstring); safe
    to run twice, and a no-op on a machine without the recorded underlay address (so a
    machine never removes another's lab when several share a file system)."""
    prefix = topo.names.prefix
    d = remote_dir(prefix)
    suffix = f"-h{machine}"
    address = topo.addresses.host_underlay(machine)
    nss = " ".join(shlex.quote(ns) for ns in namespaces)
    dels = "\n".join(line.replace("route add ", "route del ", 1) for line in routes)
    return "\n".join([
        "set -u",
        f"ip -o -4 addr show | grep -q ' {address}/' || "
        f"{{ echo 'not the machine of {address}: nothing to remove'; exit 0; }}",
        *first,
        *kill_recorded(f"{d}/pids{suffix}", nss),
        f"ip -force -batch - >/dev/null 2>&1 {heredoc(dels)}" if dels else "true",
        f"for l in $(ip -o link show | sed -n 's/^[0-9]*: \\({prefix}[^:@]*\\).*/\\1/p'); do "
        "ip link del \"$l\" 2>/dev/null; done",
        f"for ns in {nss}; do ip netns del $ns 2>/dev/null; done" if nss else "true",
        restore_sysctls(f"{d}/sysctls{suffix}"),
        f"rm -f /var/run/wireguard/{prefix}*.sock",
        f"rm -f {d}/*{suffix} {d}/*{suffix}.* {d}/*{suffix}.log",
        f"ls {d}/teardown-h*.sh >/dev/null 2>&1 || rm -rf {d}",
        "exit 0",
    ]) + "\n"
