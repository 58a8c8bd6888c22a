"""The warning record itself (kind, message, advice, labels), kept free of heavy imports so
the store can read and write warnings without loading the statistics (numpy)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class WarningKind(StrEnum):
    """What is wrong with the evidence."""

    NOISY_TRIAL = "noisy_trial"
    OUTLIERS = "outliers"
    EXTERNAL_CPU = "external_cpu"
    TOO_FEW_REPETITIONS = "too_few_repetitions"
    OFFLOAD_MISMATCH = "offload_mismatch"
    PLATFORM = "platform"
    BASELINE_DRIFT = "baseline_drift"
    THROUGHPUT_MODES = "throughput_modes"
    SOFTIRQ_SATURATION = "softirq_saturation"
    DROPS_WITH_RETRANSMITS = "drops_with_retransmits"
    OTHER = "other"


@dataclass(frozen=True)
class EvidenceWarning:
    """One warning: what (kind), where (labels), what happened (message), what to do (advice)."""

    kind: WarningKind
    message: str
    advice: str
    labels: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind.value, "message": self.message, "advice": self.advice,
                "labels": dict(self.labels)}

    @staticmethod
    def from_dict(data: Mapping[str, Any] | str) -> EvidenceWarning:
        """Read back a stored warning; a bare string becomes an ``other`` warning."""
        if isinstance(data, str):
            return EvidenceWarning(WarningKind.OTHER, data, "")
        try:
            kind = WarningKind(str(data.get("kind", "other")))
        except ValueError:
            kind = WarningKind.OTHER
        return EvidenceWarning(kind, str(data.get("message", "")), str(data.get("advice", "")),
                               {str(k): str(v) for k, v in dict(data.get("labels", {})).items()})

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.message}" + (f" ({self.advice})" if self.advice else "")
