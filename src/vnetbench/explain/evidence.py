"""The units of evidence of a run: what each path measured in one round or one trial, with the
CPU it cost and the counters around it.

A *unit* is what one path (a layer, or one of the baseline's A/A paths ``host/a``,
``host/b``) measured in one pair of a paired design (a slice of an interleaved round, or a
trial of a block) or in one trial of an unpaired run. It holds the workload's own figures
(transactions, goodput, round-trip times), the work it did (transactions, or gigabits
delivered), the wall time it took, the CPU seconds spent meanwhile by who spent them
(``client``, ``server``, ``daemons``: the layer's own processes such as wireguard-go or the
userspace forwarder, ``other nodes``) and the machine's CPU by state (user, system, softirq,
irq, busy, idle; per core too where the collectors recorded it).

A *window* is what device, TCP and UDP counters were read around: the unit itself in a trial,
a whole interleaved session (every round of one pass: labelled ``design: interleaved`` without
a pair, ``repetition`` its first round) in the interleaved design. The counters of a session
also cover its warm-up round and each piece's time before its first recorded round trip
(its settle time and warm-up round trips, ``run.interleave.Cut``), which no unit records;
their work is therefore scaled by ``(rounds + warm-up rounds) / rounds x (recorded +
unrecorded) / recorded`` (the slices' ``unrecorded_s``; for runs recorded without it,
``piece / (piece - settle)``), which counts the unrecorded time at the recorded rate.

Units and windows are grouped by *condition*: a workload under one set of labels (protocol,
placement, client and server, nodes, hosts, sweep axes), so that two entries of the same
workload kind measured differently are never pooled.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from vnetbench.results.derive import TRIAL_LABELS, scenario_duration, trial_key
from vnetbench.results.model import AA_LABEL, DESIGN_LABEL, PAIR_LABEL, Sample
from vnetbench.results.recorded import RecordedScenario
from vnetbench.run.interleave import cut_for
from vnetbench.scenario.model import LinkModel, PairingModel
from vnetbench.workloads.paired import Slicing
from vnetbench.workloads.registry import workload_model

UNIT_LABELS = frozenset({"layer", AA_LABEL, "repetition", "trial", PAIR_LABEL, DESIGN_LABEL,
                         "source"})
"""Labels that differ between the units of one condition."""
PLACE_LABELS = ("cpu", "netns", "device", "cgroup")
"""Labels only collector samples carry."""
COUNTED = ("interval", "stream", "flow", "rank", "node", "beside")
"""Labels of per-interval or per-member samples: not a unit's own figures."""
SESSION = "session-"
"""Prefix of the ``repetition`` of counters read around a whole interleaved session."""

WHO = ("client", "server", "daemons", "other nodes")
"""Who spent CPU, as far as cgroups and the client's own usage tell."""
STATES = ("user", "system", "softirq", "irq", "other")
"""The machine's busy CPU by state (``other``: steal; nice counts as user)."""
_STATE_OF = {"cpu_core_user_s": "user", "cpu_nice_s": "user", "cpu_core_sys_s": "system",
             "cpu_softirq_s": "softirq", "cpu_irq_s": "irq", "cpu_steal_s": "other",
             "cpu_busy_s": "busy", "cpu_idle_s": "idle", "cpu_iowait_s": "idle"}
_COUNTS = ("softnet_time_squeeze", "softnet_dropped", "net_rx_softirqs", "ctxt_switches")

Per = Literal["transaction", "gigabit"]


@dataclass(frozen=True)
class Condition:
    """A workload under one set of labels (the labels its units share)."""

    workload: str
    labels: tuple[tuple[str, str], ...]

    def as_dict(self) -> dict[str, str]:
        return dict(self.labels)

    def matches(self, where: Mapping[str, str] | None) -> bool:
        """Every label of ``where`` this condition carries has that value (one it does not
        carry does not describe it, as ``report.tables.select`` reads a configuration)."""
        mine = self.as_dict()
        return all(mine[k] == v for k, v in (where or {}).items() if k in mine)


@dataclass
class Unit:
    """What one path measured in one pair (or trial): see the module docstring."""

    layer: str
    aa: str
    pair: str
    key: tuple[str, ...]
    """The trial labels (``results.derive.TRIAL_LABELS``) of the unit."""
    figures: dict[str, float] = field(default_factory=dict)
    who: dict[str, float] = field(default_factory=dict)
    state: dict[str, float] = field(default_factory=dict)
    cores: dict[str, dict[str, float]] = field(default_factory=dict)
    counts: dict[str, float] = field(default_factory=dict)
    work: float = math.nan
    wall_s: float = math.nan
    labels: frozenset[tuple[str, str]] = frozenset()
    """The labels of the workload's samples (collector labels aside)."""
    t_ns: int = 0
    """When the workload's last figure was taken."""

    @property
    def path(self) -> str:
        return f"{self.layer}/{self.aa}" if self.aa else self.layer

    @property
    def round(self) -> int | None:
        """The round of an interleaved slice (its ``repetition``), else None."""
        rep = self.key[TRIAL_LABELS.index("repetition")]
        return int(rep) if rep.isdigit() else None

    @property
    def has_cpu(self) -> bool:
        return bool(self.who) or "busy" in self.state


@dataclass
class Window:
    """Device, TCP and UDP counters read around some units (see the module docstring)."""

    layer: str
    aa: str
    units: list[Unit] = field(default_factory=list)
    scale: float = 1.0
    devices: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    """(namespace role, device role) -> counter -> value (``lab_role``)."""
    tcp: dict[str, dict[str, float]] = field(default_factory=dict)
    udp: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return f"{self.layer}/{self.aa}" if self.aa else self.layer

    @property
    def work(self) -> float:
        """The work the counters saw: the units' work, scaled to the whole window."""
        done = [u.work for u in self.units if not math.isnan(u.work)]
        return sum(done) * self.scale if done else math.nan


@dataclass
class Evidence:
    """Every unit and window of one condition."""

    condition: Condition
    per: Per
    units: list[Unit]
    windows: list[Window]
    design: str
    """``interleaved``, ``blocks`` or ``unpaired``."""

    @property
    def paired(self) -> bool:
        return self.design != "unpaired"

    def layers(self) -> list[str]:
        return sorted({u.layer for u in self.units})

    def of(self, layer: str, aa: str | None = None) -> list[Unit]:
        """The units of ``layer`` (and of one A/A path when ``aa`` is given)."""
        return [u for u in self.units if u.layer == layer and (aa is None or u.aa == aa)]

    def windows_of(self, layer: str) -> list[Window]:
        return [w for w in self.windows if w.layer == layer]


def lab_role(labels: Mapping[str, str]) -> tuple[str, str]:
    """A sample's namespace and device by their role in the lab (``h1``, ``t1``): every lab
    the run builds has a prefix of its own (``vnb<id>``, see ``topology.Names``: namespaces
    ``<prefix>-<role>``, devices ``<prefix><role>``), so the same device of every
    repetition is one row. Names without the namespace's prefix are kept whole."""
    netns, device = labels.get("netns", ""), labels.get("device", "")
    prefix, dash, role = netns.partition("-")
    if not dash or not prefix:
        return netns, device
    return role, device[len(prefix):] if device.startswith(prefix) else device


def _condition(sample: Sample) -> Condition:
    labels = tuple(sorted((k, v) for k, v in sample.labels.items()
                          if k not in UNIT_LABELS and k != "workload"))
    return Condition(sample.labels.get("workload", ""), labels)


def _is_place(sample: Sample) -> bool:
    """A collector's sample (per core, device, namespace, cgroup, or labelled with its
    source, as the machine's context switches are)."""
    return any(k in sample.labels for k in PLACE_LABELS) or "source" in sample.labels


def _plain_labels(sample: Sample) -> frozenset[tuple[str, str]]:
    return frozenset((k, v) for k, v in sample.labels.items()
                     if k not in PLACE_LABELS and k != "source")


def gather(samples: Iterable[Sample], scenario: RecordedScenario | None = None,
           where: Mapping[str, str] | None = None) -> list[Evidence]:
    """The evidence of every condition of the run (those ``where`` describes, when given)
    whose units did measurable work, in a stable order."""
    scenario = scenario or RecordedScenario.from_dict({})
    pool = list(samples)
    units: dict[tuple[Condition, tuple[str, ...]], Unit] = {}
    for s in pool:
        if _is_place(s) or "workload" not in s.labels or any(k in s.labels for k in COUNTED):
            continue
        cond = _condition(s)
        if not cond.matches(where):
            continue
        key = trial_key(s)
        unit = units.get((cond, key))
        if unit is None:
            unit = units[(cond, key)] = Unit(s.labels.get("layer", ""),
                                             s.labels.get(AA_LABEL, ""),
                                             s.labels.get(PAIR_LABEL, ""), key,
                                             labels=_plain_labels(s))
        unit.figures.setdefault(s.metric, s.value)
        unit.t_ns = max(unit.t_ns, s.t_ns)
    by_key: dict[tuple[str, ...], list[Unit]] = {}
    for unit in units.values():
        by_key.setdefault(unit.key, []).append(unit)
    cpu: dict[int, list[Sample]] = {}
    for s in pool:
        if _is_place(s) and "netns" not in s.labels:
            owner = _owner(s, by_key.get(trial_key(s), []))
            if owner is not None:
                cpu.setdefault(id(owner), []).append(s)
    for unit in units.values():
        _attach_cpu(unit, cpu.get(id(unit), []), server_and_client(dict(unit.labels)))
    out: list[Evidence] = []
    conditions = sorted({c for c, _ in units}, key=lambda c: (c.workload, c.labels))
    for cond in conditions:
        mine = [u for (c, _), u in units.items() if c == cond]
        per = _per(mine)
        if per is None:
            continue
        duration = scenario_duration(scenario, cond.workload)
        for u in mine:
            _work(u, per, duration)
        mine = [u for u in mine if not math.isnan(u.work) and u.work > 0]
        if not mine:
            continue
        windows = _windows(pool, mine, by_key, cond.workload, scenario)
        out.append(Evidence(cond, per, mine, windows, _design(pool, mine)))
    return out


def _compatible(sample: Sample, unit: Unit) -> bool:
    """No label of ``sample`` (collector labels aside) says otherwise than ``unit``'s."""
    mine = dict(unit.labels)
    return all(mine.get(k, v) == v for k, v in sample.labels.items()
               if k not in PLACE_LABELS and k != "source")


def _owner(sample: Sample, candidates: Sequence[Unit]) -> Unit | None:
    """The unit a collector sample was read around: the one of its trial whose labels it
    does not contradict; of several (two workloads of one kind in one trial), the last one
    that ended before the sample was read."""
    fits = [u for u in candidates if _compatible(sample, u)]
    if len(fits) <= 1:
        return fits[0] if fits else None
    before = [u for u in fits if u.t_ns <= sample.t_ns]
    return max(before, key=lambda u: u.t_ns) if before else min(fits, key=lambda u: u.t_ns)


def _design(pool: Sequence[Sample], units: Sequence[Unit]) -> str:
    if not all(u.pair for u in units):
        return "unpaired"
    keys = {u.key for u in units}
    for s in pool:
        if trial_key(s) in keys and DESIGN_LABEL in s.labels:
            return "blocks" if s.labels[DESIGN_LABEL] == "blocks" else "interleaved"
    return "interleaved"


def _attach_cpu(unit: Unit, found: Iterable[Sample], roles: tuple[str, str]) -> None:
    """The CPU samples of ``unit``: by who (``roles``: the server's and the client's node)
    and the machine's by state and per core."""
    server, client = roles
    for s in found:
        if s.metric == "cgroup_cpu_s" and "cgroup" in s.labels:
            name = s.labels["cgroup"]
            who = ("daemons" if name == "infra" else "server" if name == server
                   else "client" if name == client else "other nodes")
            unit.who[who] = unit.who.get(who, 0.0) + s.value
        elif "cpu" in s.labels and s.metric in _STATE_OF:
            state = _STATE_OF[s.metric]
            if s.labels["cpu"] == "all":
                unit.state[state] = unit.state.get(state, 0.0) + s.value
            else:
                core = unit.cores.setdefault(s.labels["cpu"], {})
                core[state] = core.get(state, 0.0) + s.value
        elif s.metric in _COUNTS and s.labels.get("cpu", "all") == "all":
            unit.counts[s.metric] = unit.counts.get(s.metric, 0.0) + s.value


def server_and_client(unit_labels: Mapping[str, str]) -> tuple[str, str]:
    """The server's and the client's node names of a workload's labels (n0 and n1 unless
    the samples say otherwise)."""
    return unit_labels.get("server", "n0"), unit_labels.get("client", "n1")


def _per(units: Sequence[Unit]) -> Per | None:
    if any("transactions" in u.figures or "tps" in u.figures for u in units):
        return "transaction"
    if any("bytes" in u.figures or "goodput_bps" in u.figures for u in units):
        return "gigabit"
    return None


def _work(unit: Unit, per: Per, duration: float | None) -> None:
    f = unit.figures
    dur = f.get("duration_s", duration if duration is not None else math.nan)
    if per == "transaction":
        done = f.get("transactions", f.get("tps", math.nan) * dur)
        rate = f.get("tps", math.nan)
    else:
        done = (f["bytes"] * 8 / 1e9 if "bytes" in f
                else f.get("goodput_bps", math.nan) * dur / 1e9)
        rate = f.get("goodput_bps", math.nan) / 1e9
    unit.work = done
    unit.wall_s = done / rate if rate > 0 and not math.isnan(done) else dur


def _window_scale(scenario: RecordedScenario, workload: str, units: Sequence[Unit]) -> float:
    """How much more time an interleaved session's counters saw than its recorded slices:
    its warm-up rounds and each piece's time before its first recorded round trip (settling,
    warm-up round trips: ``unrecorded_s``, or for runs that did not record it the settle
    time the scenario gives; see the module docstring)."""
    rounds = len({u.round for u in units})
    if rounds <= 0:
        return 1.0
    warmup = max(1, scenario.warmup)
    slicing = _slicing(workload)
    if slicing is None:
        return (rounds + warmup) / rounds
    if all("unrecorded_s" in u.figures for u in units):
        recorded = sum(u.wall_s for u in units if not math.isnan(u.wall_s))
        unrecorded = sum(u.figures["unrecorded_s"] for u in units)
        if recorded > 0:
            return (rounds + warmup) / rounds * (recorded + unrecorded) / recorded
    cut = cut_for(slicing, _model(PairingModel, scenario.pairing),
                  _model(LinkModel, scenario.link))
    settle, piece_s = cut.settle_s, cut.piece_s
    kept = piece_s / (piece_s - settle) if 0 <= settle < piece_s else 1.0
    return (rounds + warmup) / rounds * kept


def _slicing(workload: str) -> Slicing | None:
    """How workload ``workload`` slices when interleaved (None: it does not, or this version
    knows no such workload)."""
    try:
        return workload_model(workload).slicing
    except KeyError:
        return None


M = TypeVar("M", PairingModel, LinkModel)


def _model(model: type[M], value: object) -> M:
    """``value`` (a recorded scenario's section) read as ``model``; its defaults when absent
    or unreadable (a run recorded by another version)."""
    try:
        return model.model_validate(value if value is not None else {})
    except ValueError:
        return model()


_WINDOW_LABELS = ("layer", "nodes", "hosts", "workload", "trial", AA_LABEL)
CLUSTER_NS = 500_000_000
"""Counter samples of one window are read within this of each other (sessions are seconds
apart)."""


def _where(key: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(key[TRIAL_LABELS.index(k)] for k in _WINDOW_LABELS)


def _windows(pool: Sequence[Sample], units: Sequence[Unit],
             by_key: Mapping[tuple[str, ...], Sequence[Unit]], workload: str,
             scenario: RecordedScenario) -> list[Window]:
    """The counter windows around ``units`` (device, TCP and UDP samples, by namespace):
    a trial's counters belong to its unit, a session's to the rounds it covered."""
    ids = {id(u) for u in units}
    trials: dict[int, list[Sample]] = {}
    sessions: dict[tuple[str, ...], list[Sample]] = {}
    for s in pool:
        if "netns" not in s.labels or s.labels.get("workload") != workload:
            continue
        key = trial_key(s)
        if _session_counter(s):
            sessions.setdefault(_where(key), []).append(s)
            continue
        owner = _owner(s, by_key.get(key, []))
        if owner is not None and id(owner) in ids:
            trials.setdefault(id(owner), []).append(s)
    out: list[Window] = []
    for unit in units:
        if id(unit) in trials:
            out.append(_fill(Window(unit.layer, unit.aa, [unit]), trials[id(unit)]))
    for where, members in sorted(sessions.items()):
        mine = [u for u in units if u.round is not None and _where(u.key) == where]
        previous = -1
        for cluster in _clusters(members):
            end = max(s.t_ns for s in cluster)
            covered = [u for u in mine if previous < u.t_ns <= end]
            previous = end
            if not covered:
                continue
            window = Window(covered[0].layer, covered[0].aa, covered,
                            _window_scale(scenario, workload, covered))
            out.append(_fill(window, cluster))
    return out


def _session_counter(s: Sample) -> bool:
    """Whether ``s`` was read around a whole pass of an interleaved session (every round of
    it): labelled with the design, without a pair (a unit's samples always have one); runs
    recorded before 2026-11-25 labelled it ``repetition: session-<first round>``. (Since then
    the label is the pass's first round, which this once mistook for that round's trial: a
    whole pass's packets and drops owned by its first round's slice.)"""
    return (s.labels.get("repetition", "").startswith(SESSION)
            or (s.labels.get(DESIGN_LABEL) == "interleaved" and PAIR_LABEL not in s.labels))


def _clusters(members: Sequence[Sample]) -> list[list[Sample]]:
    """Samples split where more than ``CLUSTER_NS`` passes between two reads."""
    ordered = sorted(members, key=lambda s: s.t_ns)
    out: list[list[Sample]] = []
    for s in ordered:
        if out and s.t_ns - out[-1][-1].t_ns <= CLUSTER_NS:
            out[-1].append(s)
        else:
            out.append([s])
    return out


def _fill(window: Window, members: Iterable[Sample]) -> Window:
    for s in members:
        ns, dev = lab_role(s.labels)
        if "device" in s.labels:
            counters = window.devices.setdefault((ns, dev), {})
        elif s.metric.startswith("udp_"):
            counters = window.udp.setdefault(ns, {})
        else:
            counters = window.tcp.setdefault(ns, {})
        counters[s.metric] = counters.get(s.metric, 0.0) + s.value
    return window
