"""An interactive lab: ``vnetbench up`` builds one lab and keeps it, ``vnetbench exec NODE --
CMD`` runs a command inside one of its nodes, ``vnetbench down`` tears it down.

Who owns a kept lab. ``up`` starts a *keeper*: ``python -m vnetbench.cli.up``, detached
in a session of its own (no terminal, so closing the shell does not end it), which builds
the lab exactly as a run's trial does (``open_lab``: the state file under
``/run/vnetbench`` records every namespace, process and cgroup, with the keeper as owner),
writes the lab's description (``lab.json`` in the lab's work directory: every node's
namespace, address, cgroups and CPUs), tells ``up`` over a pipe that it is ready (or why it
failed, after tearing down what it built) and then sleeps until SIGTERM or SIGINT, on which
``open_lab`` tears the lab down as after a run. ``up`` prints the nodes and how to enter
them, and exits; ``down`` sends the keeper SIGTERM, waits for it and checks that nothing of
the lab is left.

Why a keeper rather than a lab left without an owner: the rule of ``vnetbench clean``
stays the one rule for every run -- a lab whose owner lives is never touched. A kept lab's
owner is its keeper, so ``clean`` leaves it alone until ``down``; if the keeper is killed
(SIGKILL, the OOM killer, a reboot of the machine's /run), the lab is a dead run's
leftovers and ``clean`` removes it like any other.

Which lab: a scenario may sweep; ``up`` builds one lab, so a scenario listing several
layers needs ``--layer``, and one sweeping nodes or hosts needs ``--nodes``/``--hosts`` to
pick a point; any other sweep is refused. Without a scenario, ``--layer`` (default
``bridge``), ``--nodes`` (2) and ``--hosts`` (1) describe the lab. The scenario's link
shaping, resources and layer options apply; its workloads do not run (their ports are
published where a layer publishes ports at start, as Docker's ``-p``); processes are not
pinned to CPUs.

``exec`` enters the node in place (joins its cgroups, CPUs and network namespace, then
``execvp``), so the command's exit status, signals and terminal are its own, like ``ip
netns exec`` (which enters the namespace only). Nodes whose network stack is not on this
kernel (virtual machines) cannot be entered this way.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict

from vnetbench.errors import LabError, ScenarioError, VnetbenchError
from vnetbench.host.state import RunState, all_states, process_alive
from vnetbench.lab.spec import LabSpec
from vnetbench.signals import Terminated, terminate_raises

if TYPE_CHECKING:
    from vnetbench.backends.lab import Lab
    from vnetbench.host.node import Node

LAB_FILE = "lab.json"
DOWN_TIMEOUT_S = 120.0
"""Seconds ``down`` waits for the keeper's teardown before killing it and cleaning up."""
DEFAULT_LAYER = "bridge"


@dataclass(frozen=True)
class LabChoice:
    """The one lab ``up`` builds, and the name it is shown by."""

    spec: LabSpec
    name: str = "lab"


def select_lab(scenario: Path | None, layer: str | None = None, nodes: int | None = None,
               hosts: int | None = None, sets: Sequence[str] = ()) -> LabSpec:
    """The spec of the lab ``choose_lab`` picks."""
    return choose_lab(scenario, layer, nodes, hosts, sets).spec


def choose_lab(scenario: Path | None, layer: str | None = None, nodes: int | None = None,
               hosts: int | None = None, sets: Sequence[str] = ()) -> LabChoice:
    """The lab to build from ``scenario`` (or the options alone), with the ``--set KEY=VALUE``
    overrides ``sets`` applied to its data; ScenarioError when the scenario describes more
    than one lab and the options do not pick one."""
    from vnetbench.backends.catalog import LAYERS
    from vnetbench.scenario.specs import lab_spec

    if layer is not None and layer not in LAYERS:
        from vnetbench.scenario.loading import did_you_mean

        raise ScenarioError(f"--layer: unknown layer {layer!r}{did_you_mean(layer, LAYERS)}; "
                            f"allowed: {', '.join(LAYERS)}")
    if scenario is None and not sets:
        from vnetbench.lab.topology import MAX_HOSTS, capacity_problem

        spec = LabSpec(layer or DEFAULT_LAYER, 1 if hosts is None else hosts,
                       2 if nodes is None else nodes)
        if not 1 <= spec.hosts <= MAX_HOSTS:
            raise ScenarioError(f"--hosts {spec.hosts}: give 1 to {MAX_HOSTS} emulated hosts")
        if spec.nodes < 1:
            raise ScenarioError(f"--nodes {spec.nodes}: give at least 1 node")
        problem = capacity_problem(spec.hosts, spec.nodes)
        if problem:
            raise ScenarioError(f"--nodes {spec.nodes} --hosts {spec.hosts}: {problem}")
        return LabChoice(spec)
    from vnetbench.scenario.overrides import expand_with, load_scenario_with, option_overrides

    overrides = option_overrides(sets=sets)
    if scenario is None:  # the options' lab, as a scenario the overrides apply to
        sf = expand_with({"name": "lab", "layers": [layer or DEFAULT_LAYER],
                          "hosts": 1 if hosts is None else hosts,
                          "nodes": 2 if nodes is None else nodes}, "the lab", overrides)
    else:
        sf = load_scenario_with(scenario, overrides)
    points = list(sf.points)
    for key, wanted in (("nodes", nodes), ("hosts", hosts)):
        if wanted is None:
            continue
        have = sorted({getattr(p.scenario, key) for p in points})
        points = [p for p in points if getattr(p.scenario, key) == wanted]
        if not points:
            raise ScenarioError(f"{scenario}: --{key} {wanted} is not in the scenario "
                                f"({key}: {', '.join(map(str, have))})")
    if len(points) > 1:
        axes = sorted({k for p in points for k in p.axes})
        values = {k: sorted({p.axes.get(k, "") for p in points}) for k in axes}
        varying = [f"{k} ({', '.join(v)})" for k, v in values.items() if len(v) > 1]
        hint = ("pick one with --nodes/--hosts" if set(values) & {"nodes", "hosts"}
                and all(k in {"nodes", "hosts"} for k in values if len(values[k]) > 1)
                else "remove the sweep (give one value)")
        raise ScenarioError(f"{scenario}: the scenario sweeps {', '.join(varying)}; `up` "
                            f"builds one lab: {hint}")
    s = points[0].scenario
    if layer is None:
        if len(s.layers) > 1:
            raise ScenarioError(f"{scenario}: the scenario lists layers {', '.join(s.layers)}; "
                                "`up` builds one lab: pick one with --layer")
        layer = s.layers[0]
    if s.machines:
        raise ScenarioError(f"{scenario}: the scenario's hosts are real machines; `up` keeps "
                            "a lab of emulated hosts on this machine: give a scenario without "
                            "machines")
    # processes not pinned, all CPUs: a lab to work in by hand
    return LabChoice(replace(lab_spec(s, layer, seed=0), placement="off", cpus=None), s.name)


# ---- the keeper --------------------------------------------------------------------------

class NodeInfo(TypedDict):
    """One node of a kept lab, as ``lab.json`` holds it (``role``: ``node`` or ``host``)."""

    name: str
    role: str
    netns: str | None
    ip: str
    host: int
    ifname: str
    cgroup_procs: list[str]
    cpus: list[int] | None


class LabInfo(TypedDict):
    """A kept lab as ``describe`` tells it (``lab.json``; ``name``: the scenario's)."""

    run_id: str
    layer: str
    hosts: int
    keeper: int
    build_seconds: float
    nodes: list[NodeInfo]
    name: NotRequired[str]


def describe(lab: Lab) -> LabInfo:
    """What ``exec`` and ``up`` need to know of a built lab."""
    def entry(node: Node, role: str) -> NodeInfo:
        procs = [str(p) for p in node.cgroup.procs_files] if node.cgroup else []
        return {"name": node.name, "role": role, "netns": node.netns, "ip": node.ip,
                "host": node.host, "ifname": node.ifname, "cgroup_procs": procs,
                "cpus": list(node.cpus) if node.cpus else None}

    nodes = [entry(n, "node") for n in lab.nodes]
    if lab.backend.host_kind == "netns":
        nodes += [entry(lab.host_node(h), "host") for h in range(lab.topo.hosts)]
    return {"run_id": lab.run_id, "layer": lab.layer.name, "hosts": lab.topo.hosts,
            "keeper": os.getpid(), "build_seconds": round(lab.build_seconds, 3),
            "nodes": nodes}


def _send(fd: int, message: Mapping[str, object]) -> None:
    os.write(fd, (json.dumps(message) + "\n").encode())
    os.close(fd)


def keeper_main(argv: Sequence[str]) -> int:
    """The keeper's body: build, report on fd ``argv[0]``, sleep until signalled, tear down."""
    from vnetbench.backends.lab import open_lab

    fd = int(argv[0])
    args = json.loads(argv[1])
    reported = False
    try:
        choice = choose_lab(Path(args["scenario"]) if args.get("scenario") else None,
                          args.get("layer"), args.get("nodes"), args.get("hosts"),
                          args.get("set", ()))
        with open_lab(choice.spec) as lab:
            info: LabInfo = {**describe(lab), "name": choice.name}
            (lab.work_dir / LAB_FILE).write_text(json.dumps(info))
            _send(fd, {"ok": True, "lab": info})
            reported = True
            while True:
                signal.pause()
    except (Terminated, KeyboardInterrupt):
        return 0
    except VnetbenchError as exc:
        if not reported:
            _send(fd, {"ok": False, "error": str(exc)})
        return 2
    except Exception as exc:  # a bug: say so to `up` rather than vanish
        if not reported:
            _send(fd, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        raise


def start_keeper(scenario: Path | None, layer: str | None, nodes: int | None,
                 hosts: int | None, sets: Sequence[str] = ()) -> LabInfo:
    """Start a keeper and wait until its lab is built; the lab's description. LabError (or
    the keeper's own error) when it fails; Ctrl-C or SIGTERM stops the keeper, which tears
    down what it built."""
    args = {"scenario": str(scenario.resolve()) if scenario else None, "layer": layer,
            "nodes": nodes, "hosts": hosts, "set": list(sets)}
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "vnetbench.cli.up", str(write_end), json.dumps(args)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, pass_fds=(write_end,), cwd="/")
    finally:
        os.close(write_end)
    try:
        with terminate_raises():
            text = _read_all(read_end)
    except (KeyboardInterrupt, Terminated):
        proc.terminate()  # the keeper tears down what it built
        proc.wait(DOWN_TIMEOUT_S)
        raise
    finally:
        os.close(read_end)
    try:
        message = json.loads(text)
    except ValueError:
        code = proc.wait(DOWN_TIMEOUT_S)
        raise LabError(f"the lab's keeper exited {code} without building the lab") from None
    if not message.get("ok"):
        proc.wait(DOWN_TIMEOUT_S)
        raise LabError(str(message.get("error", "the lab could not be built")))
    info: LabInfo = message["lab"]  # what the keeper sent: describe(lab)
    return info


def _read_all(fd: int) -> str:
    chunks: list[bytes] = []
    while True:
        select.select([fd], [], [])
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks).decode(errors="replace")
        chunks.append(chunk)


def up_text(info: LabInfo) -> str:
    """What ``up`` prints: the nodes, their addresses and how to enter them."""
    nodes = info["nodes"]
    count = sum(1 for n in nodes if n["role"] == "node")
    lines = [f"lab {info['run_id']} ({info['layer']}, {count} nodes on {info['hosts']} "
             f"host(s)) is up, built in {info['build_seconds']:.2f} s; kept by process "
             f"{info['keeper']}",
             f"  {'node':6}{'address':17}{'interface':17}{'namespace':16}"]
    for n in nodes:
        where = f"host {n['host']}" if n["role"] == "node" else "host's own stack"
        lines.append(f"  {n['name']:6}{n['ip']:17}{n['ifname']:17}{n['netns'] or '(VM)':16}"
                     f"{where}")
    first = next(n for n in nodes if n["role"] == "node")
    other = next((n for n in nodes if n["role"] == "node" and n is not first), first)
    lab = "" if len(kept_labs()) <= 1 else f" --lab {info['run_id']}"
    lines += ["",
              f"enter a node:  vnetbench exec{lab} {first['name']} -- bash   (its namespace, "
              "cgroups and CPUs)"]
    if first["netns"]:
        lines.append(f"           or  ip netns exec {first['netns']} bash   (its namespace only)")
    lines += [f"run a command: vnetbench exec{lab} {first['name']} -- ping -c 3 {other['ip']}",
              f"tear it down:  vnetbench down{lab}"]
    return "\n".join(lines)


# ---- finding a kept lab, exec, down --------------------------------------------------------

class ExecFailed(LabError):
    """The command could not be started in the node; ``code`` is the shell's status for it
    (127 not found, 126 not executable)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class KeptLab:
    state: RunState
    info: LabInfo


def kept_labs() -> list[KeptLab]:
    """Every lab whose keeper lives."""
    out = []
    for state in all_states():
        path = Path(state.work_dir) / LAB_FILE if state.work_dir else None
        if path is None or not state.owner_alive():
            continue
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        out.append(KeptLab(state, info))
    return out


@dataclass(frozen=True)
class LabEntry:
    """One line of ``vnetbench labs``: a lab ``up`` kept, alive or left by a dead keeper."""

    run_id: str
    name: str
    layer: str
    nodes: int
    hosts: int
    created_at: float
    keeper: int
    alive: bool

    def to_dict(self, now: float) -> dict[str, object]:
        return {"id": self.run_id, "name": self.name, "layer": self.layer, "nodes": self.nodes,
                "hosts": self.hosts, "age_s": round(max(0.0, now - self.created_at), 1),
                "keeper": self.keeper, "keeper_alive": self.alive}


def lab_entries() -> list[LabEntry]:
    """Every lab ``up`` built that is still recorded here (its state file and ``lab.json``),
    oldest first, with whether its keeper lives (``RunState.owner_alive``): a lab whose keeper
    died is a dead run's leftovers, for ``vnetbench clean``."""
    out = []
    for state in all_states():
        if not state.work_dir:
            continue
        try:
            info = json.loads((Path(state.work_dir) / LAB_FILE).read_text())
            nodes = sum(1 for n in info["nodes"] if n.get("role") == "node")
            out.append(LabEntry(state.short_id, str(info.get("name", "")), str(info["layer"]),
                                nodes, int(info["hosts"]), state.created_at, state.owner_pid,
                                state.owner_alive()))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a kept lab (a run's), or its description is gone
    return sorted(out, key=lambda e: e.created_at)


def age_text(seconds: float) -> str:
    """``42 s``, ``5 min``, ``3 h 10 min``, ``2 d 4 h``."""
    whole = int(max(0.0, seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min"
    if whole < 86400:
        return f"{whole // 3600} h {whole % 3600 // 60} min"
    return f"{whole // 86400} d {whole % 86400 // 3600} h"


def labs_text(entries: Sequence[LabEntry], now: float) -> str:
    """What ``vnetbench labs`` prints: a line per kept lab, and what to do with it."""
    if not entries:
        return "no kept lab (start one with `vnetbench up [SCENARIO]`)"
    lines = [f"{'id':6}{'name':14}{'layer':19}{'nodes':>5}{'hosts':>7}  {'age':12}keeper"]
    for e in entries:
        keeper = (f"alive (pid {e.keeper})" if e.alive else
                  f"dead (pid {e.keeper}): leftovers, `vnetbench clean` removes them")
        lines.append(f"{e.run_id:6}{e.name[:13]:14}{e.layer:19}{e.nodes:>5}{e.hosts:>7}  "
                     f"{age_text(now - e.created_at):12}{keeper}")
    alive = [e for e in entries if e.alive]
    if alive:
        lab = "" if len(alive) == 1 else f" --lab {alive[0].run_id}"
        lines.append(f"enter one: vnetbench exec{lab} n0 -- bash; tear it down: "
                     f"vnetbench down{lab}")
    return "\n".join(lines)


def find_lab(run_id: str | None) -> KeptLab:
    """The kept lab ``run_id`` (default: the only one); LabError naming what to do."""
    labs = kept_labs()
    if run_id is not None:
        chosen = [k for k in labs if k.state.short_id == run_id]
        if not chosen:
            have = ", ".join(k.state.short_id for k in labs) or "none"
            raise LabError(f"no kept lab {run_id!r} (kept labs: {have})")
        return chosen[0]
    if not labs:
        raise LabError("no kept lab: start one with `vnetbench up [SCENARIO]`")
    if len(labs) > 1:
        raise LabError(f"{len(labs)} kept labs ({', '.join(k.state.short_id for k in labs)}): "
                       "pick one with --lab ID")
    return labs[0]


def exec_in(run_id: str | None, node_name: str, argv: Sequence[str]) -> None:
    """Replace this process with ``argv`` inside node ``node_name`` of a kept lab (cgroups,
    CPUs, network namespace); returns only by raising (ExecFailed: the command could not
    start)."""
    from vnetbench.host.enter import join_node

    if not argv:
        raise LabError("give the command after --, e.g. `vnetbench exec n0 -- ip addr`")
    kept = find_lab(run_id)
    nodes = {n["name"]: n for n in kept.info["nodes"]}
    if node_name not in nodes:
        raise LabError(f"lab {kept.state.short_id} has no node {node_name!r}; it has "
                       f"{', '.join(nodes)}")
    node = nodes[node_name]
    if not node["netns"]:
        raise LabError(f"node {node_name} is a virtual machine: exec enters namespace and "
                       "Docker nodes only")
    join_node(node["netns"], node["cgroup_procs"], node["cpus"])
    try:
        os.execvp(argv[0], list(argv))
    except OSError as exc:
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        raise ExecFailed(f"{argv[0]}: {exc.strerror or exc} (in node {node_name})",
                         code) from None


def down(run_id: str | None, timeout: float = DOWN_TIMEOUT_S) -> list[str]:
    """Tear a kept lab down through its keeper; lines saying what happened."""
    kept = find_lab(run_id)
    state = kept.state
    pid = state.owner_pid
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while process_alive(pid, state.owner_start) and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = []
    if process_alive(pid, state.owner_start):
        os.kill(pid, signal.SIGKILL)
        lines.append(f"the keeper (pid {pid}) did not finish its teardown in {timeout:g} s: "
                     "killed it")
    left = leftovers(state)
    if left:
        from vnetbench.cli.clean import clean

        lines += clean(only={state.short_id}).lines()
    left = leftovers(state)
    if left:
        raise LabError(f"lab {state.short_id}: still present after down: {', '.join(left)}; "
                       "run `vnetbench clean`")
    lines.append(f"lab {state.short_id} is down: nothing of it is left")
    return lines


def leftovers(state: RunState) -> list[str]:
    """What of run ``state`` is still on this host: its state file, namespaces, processes."""
    from vnetbench.host.netns import NETNS_DIR

    left = [str(state.path)] if state.path.exists() else []
    if NETNS_DIR.is_dir():
        left += [f"namespace {n}" for n in sorted(os.listdir(NETNS_DIR))
                 if n.startswith(f"vnb{state.short_id}-")]
    left += [f"process {pid}" for pid, start in state.processes if process_alive(pid, start)]
    return left


if __name__ == "__main__":
    sys.exit(keeper_main(sys.argv[1:]))
