"""Latency histograms: the probe's HDR buckets, mergeable across trials, with exact percentiles.

The probe's ``end`` event carries, beside each latency summary, ``"hist"``: the recorded buckets
of its HDR histogram as ``[[value_ns, count], ...]`` (value: the bucket's highest equivalent
value). :class:`LatencyHistogram` holds them in microseconds; :meth:`LatencyHistogram.merge`
adds histograms of several runs and :meth:`LatencyHistogram.percentile` answers as hdrhistogram's
``value_at_quantile`` does, so a percentile of merged trials is that of one long run (the design
guide's "percentiles come from merged histograms"). :class:`HistogramRecord` is one histogram
with its metric and labels, written one JSON object per line like a Sample.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from vnetbench.errors import WorkloadError

UNIT = "us"
"""The unit of bucket values (and of every HistogramRecord)."""


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _quantile(q: float) -> float:
    """``q`` percent as the fraction the probe would pass (``99.9`` -> the double ``0.999``)."""
    return float(Decimal(repr(float(q))) / 100)


@dataclass(frozen=True)
class LatencyHistogram:
    """HDR histogram buckets: (value in microseconds, count), values ascending, counts > 0."""

    buckets: tuple[tuple[float, int], ...] = ()

    @property
    def count(self) -> int:
        """Number of recorded values."""
        return sum(c for _, c in self.buckets)

    @staticmethod
    def _from_pairs(pairs: Iterable[tuple[float, int]]) -> LatencyHistogram:
        totals: dict[float, int] = {}
        for value, count in pairs:
            if count:
                totals[value] = totals.get(value, 0) + count
        return LatencyHistogram(tuple(sorted(totals.items())))

    @staticmethod
    def _validated(pairs: object, what: str) -> list[tuple[float, int]]:
        if not isinstance(pairs, list | tuple):
            raise WorkloadError(f"{what}: expected a list of [value, count] pairs, got {pairs!r}")
        out: list[tuple[float, int]] = []
        for i, pair in enumerate(pairs):
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                raise WorkloadError(f"{what}: entry {i} is not a [value, count] pair: {pair!r}")
            value, count = pair
            if not _number(value) or not math.isfinite(value) or value < 0:
                raise WorkloadError(
                    f"{what}: entry {i} has a bad value {value!r} (want a number >= 0)")
            if not _number(count) or not math.isfinite(count) or count < 0 \
                    or count != int(count):
                raise WorkloadError(
                    f"{what}: entry {i} has a bad count {count!r} (want an integer >= 0)")
            out.append((float(value), int(count)))
        return out

    @staticmethod
    def from_buckets_ns(pairs: object) -> LatencyHistogram:
        """The probe's ``"hist"``: ``[[value_ns, count], ...]``; WorkloadError if malformed."""
        checked = LatencyHistogram._validated(pairs, "probe output: latency histogram")
        return LatencyHistogram._from_pairs((v / 1000.0, c) for v, c in checked)

    @staticmethod
    def merge(hists: Iterable[LatencyHistogram]) -> LatencyHistogram:
        """One histogram holding every value of ``hists`` (counts of equal values add up)."""
        return LatencyHistogram._from_pairs(pair for h in hists for pair in h.buckets)

    def percentile(self, q: float) -> float:
        """The value at percentile ``q`` (0..100), as hdrhistogram's ``value_at_quantile``.

        The smallest bucket value whose cumulative count reaches ``ceil(q/100 * count)`` (at
        least one value); ``q=0`` gives the smallest bucket value; nan if empty.
        """
        if not 0.0 <= q <= 100.0:
            raise ValueError(f"percentile must be in [0, 100], got {q}")
        total = self.count
        if total == 0:
            return math.nan
        target = max(1, math.ceil(_quantile(q) * total))
        seen = 0
        for value, count in self.buckets:
            seen += count
            if seen >= target:
                return value
        return self.buckets[-1][0]

    def time_above(self, threshold: float) -> float:
        """Sum of the recorded values above ``threshold`` (µs): the time those took."""
        return sum(value * count for value, count in self.buckets if value > threshold)

    def to_json(self) -> dict[str, object]:
        """``{"unit": "us", "buckets": [[value, count], ...]}``."""
        return {"unit": UNIT, "buckets": [[v, c] for v, c in self.buckets]}

    @staticmethod
    def from_json(data: object) -> LatencyHistogram:
        """The inverse of :meth:`to_json`; WorkloadError if malformed."""
        if not isinstance(data, dict):
            raise WorkloadError(f"latency histogram: expected an object, got {data!r}")
        if data.get("unit") != UNIT:
            raise WorkloadError(
                f"latency histogram: unit must be {UNIT!r}, got {data.get('unit')!r}")
        checked = LatencyHistogram._validated(data.get("buckets"), "latency histogram")
        return LatencyHistogram._from_pairs(checked)


@dataclass(frozen=True)
class HistogramRecord:
    """One latency histogram with what it measured (``rtt_us``, ``sync_us``...) and labels."""

    metric: str
    unit: str
    labels: dict[str, str] = field(default_factory=dict)
    hist: LatencyHistogram = field(default_factory=LatencyHistogram)

    def with_labels(self, **labels: str) -> HistogramRecord:
        """A copy with extra labels (existing keys are overwritten)."""
        return HistogramRecord(self.metric, self.unit, {**self.labels, **labels}, self.hist)

    def to_json(self) -> str:
        """One JSON line (sorted keys)."""
        return json.dumps(
            {"metric": self.metric, "unit": self.unit, "labels": self.labels,
             "hist": self.hist.to_json()},
            sort_keys=True,
        )

    @staticmethod
    def from_dict(data: object) -> HistogramRecord:
        """The inverse of :meth:`to_json` (after ``json.loads``); WorkloadError if malformed."""
        if not isinstance(data, dict) or not isinstance(data.get("metric"), str):
            raise WorkloadError(f"histogram record: no metric in {str(data)[:200]!r}")
        labels = data.get("labels", {})
        if not isinstance(labels, dict):
            raise WorkloadError(f"histogram record: labels must be an object, got {labels!r}")
        return HistogramRecord(
            metric=data["metric"],
            unit=str(data.get("unit", UNIT)),
            labels={str(k): str(v) for k, v in labels.items()},
            hist=LatencyHistogram.from_json(data.get("hist")),
        )
