"""What a filtered view of a run leaves out, in words, so no section states less than the run
measured.

The report draws its figures at one configuration (the headline's: nodes, hosts and any
sweep axes). A figure that is empty there may have data at another configuration, and the
drop and retransmission counters may be above zero elsewhere while zero (or filtered away)
here. This module finds where the run did measure a figure's metrics
(:func:`measured_elsewhere`), totals the drop and retransmission counters per configuration
(:func:`counter_totals`), and writes the sentences an empty or partial section uses
(:func:`elsewhere_sentence`, :func:`counters_sentence`). Everything is label-driven: a
configuration is the values of the ``where`` labels each sample carries (``tables.select``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from vnetbench.report.tables import Labelled, describe_config
from vnetbench.results.model import Sample

DROP_METRICS = ("rx_drops", "tx_drops")
RETRANS_METRICS = ("tcp_retrans_segs",)
COUNTER_METRICS = (*DROP_METRICS, *RETRANS_METRICS)


def _carried(items: Iterable[Labelled]) -> dict[tuple[str, str], set[str]]:
    carried: dict[tuple[str, str], set[str]] = {}
    for item in items:
        carried.setdefault((item.metric, item.labels.get("workload", "")), set()).update(
            item.labels)
    return carried


def config_of(item: Labelled, where: Mapping[str, str],
              carried: Mapping[tuple[str, str], set[str]]) -> tuple[tuple[str, str], ...]:
    """The values ``item`` has for the labels of ``where`` that its metric and workload
    record (the others do not describe it: ``tables.select``)."""
    mine = carried.get((item.metric, item.labels.get("workload", "")), set())
    return tuple((k, item.labels.get(k, "")) for k in where if k in mine)


def measured_elsewhere(items: Sequence[Labelled], metrics: Iterable[str],
                       where: Mapping[str, str] | None) -> list[dict[str, str]]:
    """The configurations other than ``where`` at which ``items`` hold one of ``metrics``
    (values of ``where``'s labels), in the order first met; empty without ``where``."""
    if not where:
        return []
    wanted = set(metrics)
    pool = [i for i in items if i.metric in wanted]
    carried = _carried(pool)
    found: dict[tuple[tuple[str, str], ...], None] = {}
    for item in pool:
        config = config_of(item, where, carried)
        if any(where[k] != v for k, v in config):
            found.setdefault(config, None)
    return [dict(c) for c in found]


def elsewhere_sentence(what: str, where: Mapping[str, str] | None,
                       elsewhere: Sequence[Mapping[str, str]]) -> str:
    """``Nothing to draw at 2 nodes, 2 hosts: this run measured <what> at 2 nodes, 1 host.``
    (empty when there is nothing elsewhere)."""
    if not elsewhere:
        return ""
    at = describe_config(where)
    places = "; ".join(describe_config(c) or "other conditions" for c in elsewhere[:6])
    more = f" and {len(elsewhere) - 6} more" if len(elsewhere) > 6 else ""
    return (f"Nothing to draw at {at}, the configuration this page shows: the run measured "
            f"{what} only at {places}{more}. See the detail table at the end.")


@dataclass
class CounterTotals:
    """Drops and retransmissions summed over the counter samples of one configuration."""

    drops: float = 0.0
    retransmissions: float = 0.0
    readings: int = 0
    """How many counter samples were summed (zero ones included)."""
    by_layer: dict[str, float] = field(default_factory=dict)
    """Drops and retransmissions together, per layer."""

    @property
    def any(self) -> bool:
        return self.drops > 0 or self.retransmissions > 0

    def add(self, sample: Sample) -> None:
        if sample.metric in DROP_METRICS:
            self.drops += sample.value
        else:
            self.retransmissions += sample.value
        self.readings += 1
        layer = sample.labels.get("layer", "")
        self.by_layer[layer] = self.by_layer.get(layer, 0.0) + sample.value

    @property
    def amounts(self) -> str:
        """``92,176 TCP retransmissions and 2,888 packet drops``."""
        return (f"{self.retransmissions:,.0f} TCP retransmission"
                f"{'' if self.retransmissions == 1 else 's'} and {self.drops:,.0f} packet "
                f"drop{'' if self.drops == 1 else 's'}")

    @property
    def most(self) -> str:
        """The layer with the most drops and retransmissions (empty when none)."""
        layer, count = max(self.by_layer.items(), key=lambda kv: kv[1], default=("", 0.0))
        return layer if count > 0 else ""


def counter_totals(samples: Iterable[Sample], where: Mapping[str, str] | None
                   ) -> tuple[CounterTotals, CounterTotals,
                              dict[tuple[tuple[str, str], ...], CounterTotals]]:
    """Every drop and retransmission counter of the run summed: in all, at ``where`` (the
    counters whose recorded labels match it) and per other configuration (the values of
    ``where``'s labels the counters record). The counters are deltas over a trial, so a sum
    is what the run counted."""
    pool = [s for s in samples if s.metric in COUNTER_METRICS]
    carried = _carried(pool)
    everything, here = CounterTotals(), CounterTotals()
    others: dict[tuple[tuple[str, str], ...], CounterTotals] = {}
    for s in pool:
        everything.add(s)
        config = config_of(s, where or {}, carried)
        if all((where or {})[k] == v for k, v in config):
            here.add(s)
        else:
            others.setdefault(config, CounterTotals()).add(s)
    return everything, here, others


def counters_sentence(samples: Iterable[Sample], where: Mapping[str, str] | None,
                      drawn: bool) -> str:
    """What the drops section says besides its figure (``drawn``: the figure shows the
    counters above zero at ``where``). Never "none counted" while a counter is above zero:
    the totals at ``where`` and at every other configuration are named. Empty when the run
    read no counter."""
    everything, here, others = counter_totals(samples, where)
    if not everything.readings:
        return ""
    if not everything.any:
        return (f"No packet drops and no TCP retransmissions were counted "
                f"({everything.readings:,} counter readings, all zero).")
    parts = [f"In all, this run counted {everything.amounts}."]
    if where:
        at = describe_config(where)
        if not here.any:
            parts.append(f"At {at}, the configuration this page shows, no drop or "
                         "retransmission counter was above zero.")
        else:
            parts.append(f"At {at}: {here.amounts}{' (drawn)' if drawn else ''}, most on "
                         f"{here.most}.")
        for config, totals in others.items():
            if totals.any:
                parts.append(f"At {describe_config(dict(config)) or 'other conditions'}: "
                             f"{totals.amounts}, most on {totals.most}.")
    return " ".join(parts)
