"""Hot functions per layer from the per-trial profiles (``collectors.perf``, recorded when
``$VNETBENCH_PERF`` names perf): which functions a layer's trials spent their busy CPU in, and
how much more than the baseline's trials of the same workload did.

A function's share is the median over the layer's trials of its share of the busy samples
(a trial whose profile did not list it counts 0). The profile is machine-wide: functions of
other programs running meanwhile show too (``dso`` says whose).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import median

from vnetbench.results.model import Sample

METRIC = "profile_share"


@dataclass(frozen=True)
class HotFunction:
    function: str
    dso: str
    share: float
    baseline_share: float

    @property
    def added(self) -> float:
        return self.share - self.baseline_share

    @property
    def kernel(self) -> bool:
        return self.dso == "[kernel.kallsyms]"


def hot_functions(samples: Iterable[Sample], baseline: str = "host",
                  where: Mapping[str, str] | None = None, top: int = 6
                  ) -> dict[tuple[str, str], list[HotFunction]]:
    """Per (layer, workload): the ``top`` functions by share, beside the baseline's share of
    each (``where``: labels the profiles must have, when they carry them)."""
    trials: dict[tuple[str, str], set[tuple[str, str]]] = {}
    shares: dict[tuple[str, str], dict[tuple[str, str], dict[tuple[str, str], float]]] = {}
    for s in samples:
        if s.metric != METRIC or any(s.labels.get(k, v) != v for k, v in (where or {}).items()):
            continue
        key = (s.labels.get("layer", ""), s.labels.get("workload", ""))
        trial = (s.labels.get("trial", ""), s.labels.get("repetition", ""))
        trials.setdefault(key, set()).add(trial)
        fn = (s.labels.get("function", ""), s.labels.get("dso", ""))
        shares.setdefault(key, {}).setdefault(fn, {})[trial] = s.value
    out: dict[tuple[str, str], list[HotFunction]] = {}
    for (layer, workload), by_fn in shares.items():
        n = trials[(layer, workload)]
        base_key = (baseline, workload)
        base = shares.get(base_key, {})
        base_n = trials.get(base_key, set())

        def med(values: Mapping[tuple[str, str], float], of: set[tuple[str, str]]) -> float:
            return median([values.get(t, 0.0) for t in of]) if of else 0.0

        ranked = sorted(((fn, med(v, n)) for fn, v in by_fn.items()), key=lambda kv: -kv[1])
        out[(layer, workload)] = [
            HotFunction(fn, dso, share, med(base.get((fn, dso), {}), base_n))
            for (fn, dso), share in ranked[:top] if share > 0]
    return out
