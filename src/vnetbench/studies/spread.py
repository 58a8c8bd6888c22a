"""The spread a study plots, derived from a run's percentiles: ``<x>_spread_us`` = the 99th
percentile minus the 1st of the same trial (``<x>_p99_us`` - ``<x>_p1_us``, identical labels).

Study 001's Figs. 2, 3 and 5 draw the 1st-99th percentile range of the send and receive gaps
and of MPI_Barrier's synchronisation time as their "variation"; a standard deviation weighs
one stray gap as much as the whole range, and a p99 level moves with the median. A finding
about variation is judged on this spread.
"""

from __future__ import annotations

from collections.abc import Sequence

from vnetbench.results.model import Sample

HIGH, LOW, SPREAD = "_p99_us", "_p1_us", "_spread_us"


def with_spreads(samples: Sequence[Sample]) -> list[Sample]:
    """``samples`` and, for every ``<x>_p99_us`` with a ``<x>_p1_us`` of the same labels, a
    ``<x>_spread_us`` sample (the p99's time, the difference in µs)."""
    lows = {(s.metric[:-len(LOW)], tuple(sorted(s.labels.items()))): s.value
            for s in samples if s.metric.endswith(LOW)}
    out = list(samples)
    for s in samples:
        if not s.metric.endswith(HIGH):
            continue
        prefix = s.metric[:-len(HIGH)]
        low = lows.get((prefix, tuple(sorted(s.labels.items()))))
        if low is not None:
            out.append(Sample(prefix + SPREAD, s.value - low, "us", dict(s.labels), s.t_ns))
    return out
