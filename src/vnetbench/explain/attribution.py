"""A layer's added cost split into what each component explains, and what is left.

Each attribution is of a *measured* difference against the baseline (by default the one this
module computes from the units; the report passes its headline's, so the breakdown is of the
number the reader sees):

* ``round_trip``: the time a transaction adds (µs) split into the CPU each of the lab's
  processes added per transaction: the client, the server, the layer's daemons, other nodes
  (their cgroups, which hold the kernel work done in their time too). With one transaction in
  flight that work lies on the round trip's path. The remainder is time the lab's processes
  did not account for: kernel work outside them (softirq on an idle core, ksoftirqd) and
  waiting (wake-ups, queues) when positive, work done in parallel when negative.
* ``cpu``: the CPU per unit of work the lab's processes add (the report's CPU per transaction
  or per Gbit/s) split by who spent it.
* ``cpu_by_state`` and ``outside``: the machine's CPU as cores busy while the path ran, by
  state (user, system, softirq, irq, steal), and outside the lab's processes. Cores, not
  CPU per unit of work: whatever else runs on the machine costs the same per second during
  the layer's slices as during the baseline's, so a difference of cores cancels it, where a
  difference per unit of work would grow with the time a unit takes.
* ``throughput``: a throughput ratio (a stream's goodput, transactions/s) as the product of
  two factors that multiply to it exactly on the units' sums: the lab's CPU per unit of work
  (the baseline's over the layer's) and the lab's CPU kept busy, in cores (the layer's over
  the baseline's). A CPU-bound workload loses throughput by the first, one that waits
  (losses, a full window, wake-ups) by the second. The remainder factor is what the
  headline's paired ratio differs from the product.

Differences are taken round by round where the run was paired (each unit of the layer against
the mean of the baseline's units of the same pair) and as differences of means otherwise, so
the parts add up. The *floor* is the smallest difference the run resolves for the measured
quantity: the A/A paths' mean difference plus the half-width of its 95% interval (or the
report's noise floor times the baseline's value). A remainder within the floor is "explained
within the noise"; beyond it, it is reported as unexplained.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import fmean, stdev

from vnetbench.explain.breakdown import SCALE
from vnetbench.explain.evidence import STATES, WHO, Evidence, Unit

Z95 = 1.96
REST = "rest"
"""The part of the machine's CPU outside the lab's processes."""
PART_TITLES = {"client": "client", "server": "server", "daemons": "layer daemons",
               "other nodes": "other nodes", REST: "outside the lab's processes",
               "user": "user", "system": "system", "softirq": "softirq", "irq": "irq",
               "other": "steal", "cpu per work": "the lab's CPU per unit of work",
               "busy": "the lab's CPU kept busy"}


@dataclass(frozen=True)
class Part:
    """One component's share of a difference, with its 95% interval."""

    name: str
    value: float
    low: float = math.nan
    high: float = math.nan

    @property
    def title(self) -> str:
        return PART_TITLES.get(self.name, self.name)


@dataclass(frozen=True)
class Attribution:
    """A measured difference and the parts that explain it (see the module docstring)."""

    layer: str
    baseline: str
    quantity: str
    """``round trip``, ``CPU``, ``CPU by state`` or ``throughput``."""
    unit: str
    """``µs``, ``µs CPU``, ``cores/(Gbit/s)``, ``cores``, or ``x`` for a ratio."""
    measured: float
    parts: tuple[Part, ...]
    floor: float
    """The smallest difference the run resolves (same unit; a relative half-width for a
    ratio); nan when the run has no A/A control."""
    pairs: int
    paired: bool
    source: str = "units"
    """Where ``measured`` came from: ``units`` or ``headline``."""

    @property
    def multiplicative(self) -> bool:
        return self.unit == "x"

    @property
    def explained_value(self) -> float:
        if self.multiplicative:
            return math.prod(p.value for p in self.parts) if self.parts else math.nan
        return sum(p.value for p in self.parts)

    @property
    def remainder(self) -> float:
        """What the parts leave of the measured difference (a factor for a ratio)."""
        if self.multiplicative:
            explained = self.explained_value
            return self.measured / explained if explained > 0 else math.nan
        return self.measured - self.explained_value

    @property
    def within_floor(self) -> bool:
        """The parts add up to the measured difference within the run's noise floor."""
        rest = self.remainder
        if math.isnan(rest) or math.isnan(self.floor):
            return False
        if self.multiplicative:
            return rest > 0 and abs(math.log(rest)) <= math.log1p(self.floor)
        return abs(rest) <= self.floor


Quantity = Callable[[Unit], float]


def _per_work(value: Callable[[Unit], float | None], scale: float) -> Quantity:
    def of(u: Unit) -> float:
        got = value(u)
        return got / u.work * scale if got is not None and u.work > 0 else math.nan
    return of


def _who(name: str) -> Callable[[Unit], float | None]:
    def of(u: Unit) -> float | None:
        if not u.who:
            return None
        if name == REST:
            return u.state["busy"] - sum(u.who.values()) if "busy" in u.state else None
        return u.who.get(name, 0.0)
    return of


def _state(name: str) -> Callable[[Unit], float | None]:
    return lambda u: u.state.get(name, 0.0) if "busy" in u.state else None


def _lab(u: Unit) -> float | None:
    return sum(u.who.values()) if u.who else None


def _wall(u: Unit) -> float | None:
    return None if math.isnan(u.wall_s) else u.wall_s


@dataclass(frozen=True)
class Delta:
    value: float
    low: float
    high: float
    n: int


def delta(layer: Sequence[Unit], base: Sequence[Unit], quantity: Quantity,
          paired: bool) -> Delta:
    """The layer's mean ``quantity`` minus the baseline's: round by round when paired (the
    mean of per-pair differences, each against the mean of the baseline's units of the
    pair), else the difference of the means; with a 95% normal interval."""
    if paired:
        base_by: dict[str, list[float]] = {}
        for u in base:
            v = quantity(u)
            if not math.isnan(v):
                base_by.setdefault(u.pair, []).append(v)
        diffs = []
        for u in layer:
            v = quantity(u)
            if not math.isnan(v) and base_by.get(u.pair):
                diffs.append(v - fmean(base_by[u.pair]))
        return _mean_interval(diffs)
    xs = [v for v in map(quantity, layer) if not math.isnan(v)]
    ys = [v for v in map(quantity, base) if not math.isnan(v)]
    if not xs or not ys:
        return Delta(math.nan, math.nan, math.nan, 0)
    d = fmean(xs) - fmean(ys)
    se = math.sqrt((stdev(xs) ** 2 / len(xs) if len(xs) > 1 else math.nan)
                   + (stdev(ys) ** 2 / len(ys) if len(ys) > 1 else math.nan))
    return Delta(d, d - Z95 * se, d + Z95 * se, min(len(xs), len(ys)))


def _mean_interval(values: Sequence[float]) -> Delta:
    if not values:
        return Delta(math.nan, math.nan, math.nan, 0)
    m = fmean(values)
    half = Z95 * stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.nan
    return Delta(m, m - half, m + half, len(values))


def aa_floor(base: Sequence[Unit], quantity: Quantity, paired: bool) -> float:
    """The smallest difference of ``quantity`` the run resolves: the baseline's path ``b``
    against its path ``a`` (|mean difference| + the half-width of its 95% interval); nan
    without both A/A paths."""
    a = [u for u in base if u.aa == "a"]
    b = [u for u in base if u.aa == "b"]
    if not a or not b:
        return math.nan
    d = delta(b, a, quantity, paired)
    if math.isnan(d.value):
        return math.nan
    half = (d.high - d.low) / 2 if not math.isnan(d.high) else 0.0
    return abs(d.value) + half


def _parts(layer: Sequence[Unit], base: Sequence[Unit], names: Sequence[str],
           of: Callable[[str], Callable[[Unit], float | None]], scale: float,
           paired: bool) -> tuple[Part, ...]:
    out = []
    for name in names:
        d = delta(layer, base, _per_work(of(name), scale), paired)
        if not math.isnan(d.value):
            out.append(Part(name, d.value, d.low, d.high))
    return tuple(out)


def _units(evidence: Evidence, layer: str, baseline: str) -> tuple[list[Unit], list[Unit]]:
    return ([u for u in evidence.of(layer) if u.has_cpu],
            [u for u in evidence.of(baseline) if u.has_cpu])


def round_trip(evidence: Evidence, layer: str, baseline: str = "host",
               measured: float | None = None, floor: float | None = None) -> Attribution | None:
    """The time a transaction adds, split by the CPU each part adds (module docstring)."""
    if evidence.per != "transaction":
        return None
    mine, base = _units(evidence, layer, baseline)
    if not mine or not base:
        return None
    scale = SCALE["transaction"]
    time = _per_work(_wall, scale)
    d = delta(mine, base, time, evidence.paired)
    who = [w for w in WHO if any(w in u.who for u in mine + base)]
    parts = _parts(mine, base, who, _who, scale, evidence.paired)
    return Attribution(layer, baseline, "round trip", "µs",
                       d.value if measured is None else measured, parts,
                       aa_floor(base, time, evidence.paired) if floor is None else floor,
                       d.n, evidence.paired, "units" if measured is None else "headline")


def cpu(evidence: Evidence, layer: str, baseline: str = "host",
        measured: float | None = None, floor: float | None = None) -> Attribution | None:
    """The CPU per unit of work the lab's processes add, split by who spent it."""
    mine, base = _units(evidence, layer, baseline)
    if not mine or not base:
        return None
    scale = SCALE[evidence.per]
    lab = _per_work(_lab, scale)
    d = delta(mine, base, lab, evidence.paired)
    who = [w for w in WHO if any(w in u.who for u in mine + base)]
    parts = _parts(mine, base, who, _who, scale, evidence.paired)
    return Attribution(layer, baseline, "CPU", _cpu_unit(evidence),
                       d.value if measured is None else measured, parts,
                       aa_floor(base, lab, evidence.paired) if floor is None else floor,
                       d.n, evidence.paired, "units" if measured is None else "headline")


def _cores(value: Callable[[Unit], float | None], cores: int) -> Quantity:
    """``value`` as cores busy while the unit ran: its share of the machine's time (busy
    plus idle, every core) times the cores."""
    def of(u: Unit) -> float:
        got = value(u)
        total = u.state.get("busy", 0.0) + u.state.get("idle", 0.0)
        return got / total * cores if got is not None and total > 0 else math.nan
    return of


def cpu_by_state(evidence: Evidence, layer: str, baseline: str = "host",
                 cores: int = 0) -> Attribution | None:
    """The machine's added cores busy while the layer ran, split by state (user, system,
    softirq, irq, steal); None without the machine's CPU by state or its core count."""
    mine = [u for u in evidence.of(layer) if "busy" in u.state]
    base = [u for u in evidence.of(baseline) if "busy" in u.state]
    if not mine or not base or cores <= 0:
        return None
    busy = _cores(_state("busy"), cores)
    d = delta(mine, base, busy, evidence.paired)
    parts = []
    for name in STATES:
        part = delta(mine, base, _cores(_state(name), cores), evidence.paired)
        if not math.isnan(part.value):
            parts.append(Part(name, part.value, part.low, part.high))
    return Attribution(layer, baseline, "CPU by state", "cores", d.value, tuple(parts),
                       aa_floor(base, busy, evidence.paired), d.n, evidence.paired)


def outside(evidence: Evidence, layer: str, baseline: str = "host",
            cores: int = 0) -> Part | None:
    """The added cores busy outside the lab's processes while the layer ran (kernel work
    charged to none of them, ksoftirqd; the rest of the machine cancels out)."""
    mine, base = _units(evidence, layer, baseline)
    mine = [u for u in mine if "busy" in u.state]
    base = [u for u in base if "busy" in u.state]
    if not mine or not base or cores <= 0:
        return None
    d = delta(mine, base, _cores(_who(REST), cores), evidence.paired)
    return None if math.isnan(d.value) else Part(REST, d.value, d.low, d.high)


def throughput(evidence: Evidence, layer: str, baseline: str = "host",
               measured: float | None = None, floor: float | None = None
               ) -> Attribution | None:
    """A throughput ratio as the lab's CPU per unit of work x the lab's CPU kept busy
    (module docstring)."""
    mine = [u for u in evidence.of(layer) if u.who and not math.isnan(u.wall_s)]
    base = [u for u in evidence.of(baseline) if u.who and not math.isnan(u.wall_s)]
    if not mine or not base:
        return None

    def sums(units: Sequence[Unit]) -> tuple[float, float, float]:
        return (sum(u.work for u in units), sum(u.wall_s for u in units),
                sum(sum(u.who.values()) for u in units))

    work_l, wall_l, busy_l = sums(mine)
    work_b, wall_b, busy_b = sums(base)
    if min(work_l, wall_l, busy_l, work_b, wall_b, busy_b) <= 0:
        return None
    per_work = (busy_b / work_b) / (busy_l / work_l)
    busy = (busy_l / wall_l) / (busy_b / wall_b)
    ratio = (work_l / wall_l) / (work_b / wall_b)
    parts = (Part("cpu per work", per_work), Part("busy", busy))
    return Attribution(layer, baseline, "throughput", "x",
                       ratio if measured is None else measured, parts,
                       _throughput_floor(base) if floor is None else floor,
                       min(len(mine), len(base)), evidence.paired,
                       "units" if measured is None else "headline")


def _throughput_floor(base: Sequence[Unit]) -> float:
    """The A/A paths' throughput ratio's distance from 1 (relative), nan without both."""
    a = [u for u in base if u.aa == "a"]
    b = [u for u in base if u.aa == "b"]
    if not a or not b:
        return math.nan
    ga = sum(u.work for u in a) / sum(u.wall_s for u in a)
    gb = sum(u.work for u in b) / sum(u.wall_s for u in b)
    return abs(gb / ga - 1.0) if ga > 0 else math.nan


def _cpu_unit(evidence: Evidence) -> str:
    return "µs CPU" if evidence.per == "transaction" else "cores/(Gbit/s)"
