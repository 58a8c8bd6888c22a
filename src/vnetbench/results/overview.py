"""A run's headline figures as data (what ``vnetbench run --json`` prints).

One entry per condition group (every label but the replicate ones: repetition, trial, A/A
group) of the headline metrics (``MAIN_METRICS``: workload results, no collector evidence),
with its median, the number of values and the unit; the run's id, absolute path, status and
evidence warnings beside them. Numbers that are not finite become ``None`` so the result is strict
JSON.
"""

from __future__ import annotations

import math
from typing import Any

from vnetbench.results.metrics import MAIN_METRICS
from vnetbench.results.stats import condition_keys, group_samples, median
from vnetbench.results.store import RunData


def run_overview(run: RunData) -> dict[str, Any]:
    """The run and the median of every headline group (see the module docstring)."""
    headline = [s for s in run.samples if s.metric in MAIN_METRICS and not s.is_evidence]
    group_by = condition_keys(headline)
    groups = []
    for key, members in sorted(group_samples(headline, group_by).items()):
        labels = {k: v for k, v in zip(group_by, key, strict=True) if v and k != "metric"}
        value = median(s.value for s in members)
        groups.append({"metric": members[0].metric, "unit": members[0].unit, "labels": labels,
                       "median": value if math.isfinite(value) else None, "n": len(members)})
    return {"run_id": run.run_id, "run_dir": str(run.path.resolve()), "status": run.status.value,
            "samples": len(run.samples), "warnings": list(run.meta.warnings),
            "headline": groups}
