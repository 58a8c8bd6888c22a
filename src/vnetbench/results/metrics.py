"""What vnetbench knows about each metric a workload reports, in one table: its title in the
report, its short name in terminal tables and the headline's header, whether it is a
workload's main figure (its spread decides adaptive repetition and the evidence warnings),
whether ``compare`` judges it by default, and its place among the headline's columns and
the scaling figure's panels.

Every list the report, ``compare``, the runner and the scenario's thresholds use is derived
here (``QUALITY_METRICS``, ``MAIN_METRICS``, ``HEADLINE_METRICS``, ``METRIC_TITLES``,
``HEADER_TITLES``, ``SHORT_TITLES``, ``SCALING_METRICS``), so a workload with a new metric
adds one ``Metric`` line here. A metric not in the table is reported under its own name and
judged only with ``compare --all-metrics``. Several workloads share metric names (``tps``:
rr, crr, sockperf...), which is why the facts are kept by metric rather than by workload.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PERCENTILE_METRIC = re.compile(r"^(?P<base>[a-z_]+)_p(?P<q>\d+)_us$")


def percentile_of(metric: str) -> tuple[str, float] | None:
    """``rtt_p99_us`` -> (``rtt_us``, 99.0); ``rtt_p999_us`` -> (``rtt_us``, 99.9)."""
    m = PERCENTILE_METRIC.match(metric)
    if m is None:
        return None
    digits = m.group("q")
    q = float(digits) if len(digits) <= 2 else float(f"{digits[:2]}.{digits[2:]}")
    return f"{m.group('base')}_us", q


@dataclass(frozen=True)
class Metric:
    """The facts of one metric (see the module docstring)."""

    name: str
    title: str | None = None
    """The report's name for it (``RTT p50``); none: the metric's own name."""
    header: str | None = None
    """The headline table's short column header, where it differs from the title."""
    short: str | None = None
    """Its name in a terminal table's column (``p50``)."""
    quality: bool = False
    """A workload's main figure: its spread decides adaptive repetition (``until_cv``) and
    the evidence warnings (noise, outliers, repetitions) are about it; judged by
    ``compare``."""
    main: bool = False
    """Judged by ``compare`` by default (the figures a report's headline is made of)."""
    headline: int = 0
    """Its place among the headline table's columns (1 first; 0: not a headline column)."""
    scaling: int = 0
    """Its place among the panels of the figure along a swept axis (0: none)."""


def _table(*metrics: Metric) -> dict[str, Metric]:
    table: dict[str, Metric] = {}
    for metric in metrics:
        if metric.name in table:
            raise ValueError(f"metric {metric.name!r} is in the table twice")
        table[metric.name] = metric
    return table


METRICS: dict[str, Metric] = _table(
    Metric("rtt_p50_us", title="RTT p50", header="RTT p50", short="p50", quality=True, headline=1, scaling=6),
    Metric("rtt_p99_us", title="RTT p99", header="RTT p99", short="p99", main=True, headline=2, scaling=4),
    Metric("tps", title="Transactions/s", header="Trans./s", short="tps", quality=True, headline=3, scaling=1),
    Metric("goodput_bps", title="Goodput", short="goodput", quality=True, headline=4, scaling=2),
    Metric("cpu_us_per_tx", title="CPU per transaction", header="CPU / trans.", short="cpu/tx", headline=5),
    Metric("cpu_cores_per_gbps", title="CPU per Gbit/s", header="CPU / Gbit/s", short="cpu/Gbps", headline=6),
    Metric("sync_p50_us", title="Sync p50", quality=True, headline=7),
    Metric("sync_p99_us", title="Sync p99", main=True, headline=8, scaling=5),
    Metric("rounds_per_s", title="Rounds/s", main=True, headline=9, scaling=3),
    Metric("mean_jitter_us", title="Jitter", main=True, headline=10),
    Metric("recv_gap_dev_p99_us", title="Gap dev. p99", main=True, headline=11),
    Metric("rtt_p1_us", title="RTT p1"),
    Metric("paused_s", title="Time in pauses"),
    Metric("unrecorded_s", title="Time run unrecorded"),
    Metric("rtt_p25_us", title="RTT p25"),
    Metric("rtt_p75_us", title="RTT p75"),
    Metric("elapsed_s", title="Elapsed time", quality=True, scaling=7),
    Metric("dfsio_throughput_mib_per_s", title="DFSIO throughput"),
    Metric("goodput_interval_bps", title="Goodput per interval"),
    Metric("tps_interval", title="Transactions/s per interval"),
    Metric("rtt_p99_interval_us", title="RTT p99 per interval"),
    Metric("rtt_p50_interval_us", title="RTT p50 per interval"),
    Metric("bitrate_interval_bps", title="Bit rate per interval"),
    Metric("allreduce_p50_us", quality=True),
    Metric("allreduce_p99_us", main=True),
    Metric("avg_io_rate_mb_s", main=True),
    Metric("bitrate_bps", main=True),
    Metric("jitter_us", quality=True),
    Metric("latency_mean_ms", quality=True),
    Metric("latency_p95_ms", main=True),
    Metric("latency_p99_ms", main=True),
    Metric("loss", main=True),
    Metric("mpi_runtime_s", quality=True),
    Metric("recv_gap_p50_us", quality=True),
    Metric("throughput_mb_s", main=True),
)


def _ranked(place: dict[str, int]) -> tuple[str, ...]:
    return tuple(sorted((name for name, rank in place.items() if rank), key=place.__getitem__))


QUALITY_METRICS = frozenset(m.name for m in METRICS.values() if m.quality)
"""A workload's main figures (``Metric.quality``)."""
MAIN_METRICS = frozenset(m.name for m in METRICS.values() if m.quality or m.main)
"""What ``vnetbench compare`` judges by default: the figures a report's headline is made of.
The rest (the probe's own CPU seconds, min/max/p1 latencies, collector evidence) is judged
with ``--all-metrics``: judging hundreds of secondary numbers at 5% each would call some
"regressions" by chance alone."""
HEADLINE_METRICS: tuple[str, ...] = _ranked({m.name: m.headline for m in METRICS.values()})
SCALING_METRICS: tuple[str, ...] = _ranked({m.name: m.scaling for m in METRICS.values()})
METRIC_TITLES: dict[str, str] = {m.name: m.title for m in METRICS.values() if m.title}
HEADER_TITLES: dict[str, str] = {m.name: m.header for m in METRICS.values() if m.header}
"""Short column titles of the headline table (the full title shows on hover)."""
SHORT_TITLES: dict[str, str] = {m.name: m.short for m in METRICS.values() if m.short}
