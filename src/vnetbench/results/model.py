"""The unit of evidence: a Sample (one measured number with its unit and labels).

A sample's metric name carries its unit (``rtt_p99_us``, ``goodput_bps``); labels say
under which conditions it was measured (layer, nodes, workload, repetition, ...).
Samples are written one JSON object per line to ``samples.jsonl``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

AA_LABEL = "aa"
"""Label of the baseline's trials in a run with an A/A control: ``a`` or ``b`` (two
interleaved, independent groups of the same layer). Pooled for ratios, split for the floor."""

PAIR_LABEL = "pair"
"""Label naming what a sample was measured together with in a paired design: its round of
interleaved paths (``<session>.<round>``) or its block of trials (``<round>-<layer>``); see
``results.pairing``."""
DESIGN_LABEL = "design"
"""Label of samples measured in a paired design: ``interleaved`` or ``blocks``."""

COMMON_LABELS: tuple[str, ...] = ("layer", "nodes", "hosts", "workload", "repetition", "trial")
"""The labels most samples carry: their own columns first in exports and DataFrames."""

EVIDENCE_LABELS = frozenset({"source", "cpu", "netns", "device", "cgroup"})
"""Labels only collector samples carry (per core, per device, per namespace, per cgroup)."""


@dataclass(frozen=True)
class Sample:
    """One measured value."""

    metric: str
    value: float
    unit: str
    labels: dict[str, str] = field(default_factory=dict)
    t_ns: int = field(default_factory=time.monotonic_ns)

    @property
    def is_evidence(self) -> bool:
        """A collector's sample (CPU per core, device counters, ...), not a workload result."""
        return any(k in self.labels for k in EVIDENCE_LABELS)

    def with_labels(self, **labels: str) -> Sample:
        """A copy with extra labels (existing keys are overwritten)."""
        return Sample(self.metric, self.value, self.unit, {**self.labels, **labels}, self.t_ns)

    def to_json(self) -> str:
        return json.dumps(
            {"metric": self.metric, "value": self.value, "unit": self.unit,
             "labels": self.labels, "t_ns": self.t_ns},
            sort_keys=True,
        )

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Sample:
        return Sample(
            metric=str(data["metric"]),
            value=float(data["value"]),
            unit=str(data["unit"]),
            labels={str(k): str(v) for k, v in dict(data.get("labels", {})).items()},
            t_ns=int(data.get("t_ns", 0)),
        )
