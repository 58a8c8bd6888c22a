"""Everything the explain package says about one run: per workload condition, each layer's
breakdown, attributions and hypothesis checks beside the baseline's breakdown.

``explain_run`` takes the run's samples, scenario and environment, the baseline layer and
(optionally) the configuration to explain and the report's headline figures (``Measured``
per layer, workload and metric): an attribution then splits the very difference the
headline shows, and judges its remainder against the headline's noise floor. Without them,
each attribution measures its own difference from the units (``attribution``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vnetbench.explain import attribution, hypotheses
from vnetbench.explain.attribution import Attribution, Part
from vnetbench.explain.breakdown import PathCost, path_cost
from vnetbench.explain.evidence import Evidence, gather
from vnetbench.explain.facts import PathFacts, crossing_parts, path_facts
from vnetbench.explain.hypotheses import Check
from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario

ROUND_TRIP_METRIC = "rtt_p50_us"
CPU_METRICS = {"transaction": "cpu_us_per_tx", "gigabit": "cpu_cores_per_gbps"}
THROUGHPUT_METRICS = {"transaction": "tps", "gigabit": "goodput_bps"}


@dataclass(frozen=True)
class Measured:
    """A headline figure: the difference (``ratio`` for a throughput) and the floor it is
    judged against (absolute, in the same unit; relative for a ratio)."""

    value: float
    floor: float


@dataclass
class LayerWhy:
    """One layer under one condition: its cost and why it differs from the baseline's."""

    layer: str
    cost: PathCost
    facts: PathFacts
    round_trip: Attribution | None = None
    cpu: Attribution | None = None
    by_state: Attribution | None = None
    outside: Part | None = None
    throughput: Attribution | None = None
    checks: list[Check] = field(default_factory=list)


@dataclass
class ConditionWhy:
    """One workload condition: the baseline's cost and every other layer's explanation."""

    evidence: Evidence
    baseline: PathCost
    baseline_facts: PathFacts
    layers: list[LayerWhy] = field(default_factory=list)
    name: str = ""
    """The workload, with what tells it from another condition of the same workload kind
    (``stream udp``)."""

    @property
    def workload(self) -> str:
        return self.evidence.condition.workload

    def layer(self, name: str) -> LayerWhy | None:
        return next((lw for lw in self.layers if lw.layer == name), None)


def explain_run(samples: Sequence[Sample], scenario: RecordedScenario,
                environment: Mapping[str, Any], *, baseline: str = "host",
                where: Mapping[str, str] | None = None,
                headline: Mapping[tuple[str, str, str], Measured] | None = None,
                never_crossed: Mapping[str, str] | None = None) -> list[ConditionWhy]:
    """Every condition at ``where`` that has the baseline (see the module docstring).
    ``headline`` is keyed by (layer, workload, metric); it is used for a workload only when
    one condition of it is at ``where`` (two, e.g. TCP and UDP streams, share one headline
    column). ``never_crossed``: layers whose own path the configuration does not cross, with
    why (``report.answer.path_notes``)."""
    cores = int(environment.get("cores") or 0)
    crossing = crossing_parts(environment)
    found = gather(samples, scenario, where)
    count: dict[str, int] = {}
    for ev in found:
        count[ev.condition.workload] = count.get(ev.condition.workload, 0) + 1
    out: list[ConditionWhy] = []
    for ev in found:
        base_facts = path_facts(environment, baseline)
        base = path_cost(ev, baseline, base_facts, cores)
        if base is None:
            continue
        mine = headline if headline is not None and count[ev.condition.workload] == 1 else {}
        why = ConditionWhy(ev, base, base_facts, name=_name(ev, found))
        named = why.name
        for layer in ev.layers():
            if layer == baseline:
                continue
            facts = path_facts(environment, layer)
            cost = path_cost(ev, layer, facts, cores)
            if cost is None:
                continue
            lw = _layer(ev, layer, baseline, cost, base, facts, mine,
                        (never_crossed or {}).get(layer, ""), layer in crossing)
            lw.checks = [dataclasses.replace(c, workload=named) for c in lw.checks]
            why.layers.append(lw)
        out.append(why)
    return out


def _layer(ev: Evidence, layer: str, baseline: str, cost: PathCost, base: PathCost,
           facts: PathFacts, headline: Mapping[tuple[str, str, str], Measured],
           never_crossed: str, overlay: bool) -> LayerWhy:
    wl = ev.condition.workload

    def given(metric: str) -> Measured | None:
        return headline.get((layer, wl, metric))

    rt = given(ROUND_TRIP_METRIC) if "rtt_mean_us" in _figures(ev) else None
    cp = given(CPU_METRICS[ev.per])
    tp = given(THROUGHPUT_METRICS[ev.per])
    lw = LayerWhy(layer, cost, facts)
    if "rtt_mean_us" in _figures(ev):
        lw.round_trip = attribution.round_trip(ev, layer, baseline,
                                               rt.value if rt else None, rt.floor if rt else None)
    lw.cpu = attribution.cpu(ev, layer, baseline, cp.value if cp else None,
                             cp.floor if cp else None)
    lw.by_state = attribution.cpu_by_state(ev, layer, baseline, cost.cores)
    lw.outside = attribution.outside(ev, layer, baseline, cost.cores)
    lw.throughput = attribution.throughput(ev, layer, baseline, tp.value if tp else None,
                                           tp.floor if tp else None)
    checks = [hypotheses.softirq_saturation(ev, cost, base, overlay, never_crossed),
              hypotheses.drops_behind_retransmissions(ev, cost, facts),
              hypotheses.forwarder_bound(ev, cost, base, baseline)]
    lw.checks = [c for c in checks if c is not None]
    return lw


def _name(ev: Evidence, found: Sequence[Evidence]) -> str:
    """``stream udp``: the workload and the values of the labels that differ between its
    conditions (just the workload when it has one)."""
    same = [e.condition.as_dict() for e in found if e.condition.workload == ev.condition.workload]
    if len(same) < 2:
        return ev.condition.workload
    mine = ev.condition.as_dict()
    differ = [k for k in sorted(mine) if any(other.get(k) != mine[k] for other in same)]
    return " ".join([ev.condition.workload, *(mine[k] for k in differ if mine[k])])


def _figures(ev: Evidence) -> set[str]:
    return {m for u in ev.units for m in u.figures}


def all_checks(explained: Sequence[ConditionWhy]) -> list[Check]:
    """Every check of every condition, in order."""
    return [c for why in explained for lw in why.layers for c in lw.checks]
