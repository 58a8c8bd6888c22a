"""The report's Hadoop section: per-benchmark ratios to native with intervals (elapsed time,
TestDFSIO throughput) and the job counters beside them."""

from __future__ import annotations

from vnetbench.report.hadoop import counter_rows, hadoop_table, render_hadoop
from vnetbench.results.model import Sample


def trial(layer: str, i: int, teragen: float, dfsio_mib: float, shuffle: float) -> list[Sample]:
    base = {"layer": layer, "workload": "hadoop", "hosts": "1", "nodes": "3",
            "trial": f"{layer}{i}", "repetition": str(i)}
    return [
        Sample("elapsed_s", teragen, "s", {**base, "benchmark": "teragen"}),
        Sample("elapsed_s", teragen * 1.5, "s", {**base, "benchmark": "terasort"}),
        Sample("shuffle_bytes", shuffle, "B", {**base, "benchmark": "terasort"}),
        Sample("elapsed_s", 20.0, "s", {**base, "benchmark": "dfsio-write"}),
        Sample("dfsio_throughput_mib_per_s", dfsio_mib, "MiB/s",
               {**base, "benchmark": "dfsio-write"}),
        Sample("hadoop_daemon_peak_rss_bytes", 1e8, "B", {**base, "role": "datanode"}),
    ]


def run() -> list[Sample]:
    out: list[Sample] = []
    for i in range(5):
        out += trial("host", i, 10.0 + 0.1 * i, 50.0 - 0.2 * i, 1e6)
        out += trial("bridge", i, 13.0 + 0.1 * i, 40.0 - 0.2 * i, 1e6)
    return out


def test_one_column_group_per_benchmark_with_ratios_and_intervals() -> None:
    table = hadoop_table(run())
    assert table is not None
    groups = [(c.workload, c.metric) for c in table.columns]
    assert ("hadoop teragen", "elapsed_s") in groups
    assert ("hadoop dfsio-write", "dfsio_throughput_mib_per_s") in groups
    assert table.layers == ["host", "bridge"]
    teragen = next(c for c in table.columns if c.workload == "hadoop teragen")
    cell = table.cells[("bridge", teragen)]
    assert cell.ratio is not None and 1.25 < cell.ratio.ratio.value < 1.35
    assert cell.verdict(1.05) == "worse"  # 5 vs 5 trials, 30% slower: called
    dfsio = next(c for c in table.columns if c.metric == "dfsio_throughput_mib_per_s")
    assert table.cells[("bridge", dfsio)].verdict(1.05) == "worse"  # lower MiB/s


def test_counters_sit_beside_the_ratios() -> None:
    table = hadoop_table(run())
    assert table is not None
    rows = counter_rows(run(), table)
    assert ("terasort", "bytes shuffled", ["1 MB", "1 MB (\u00d71.00)"]) in rows
    html = render_hadoop(run())
    assert 'id="hadoop"' in html and "hadoop teragen" in html and "Job counters" in html
    assert "MiB/s" in html


def test_no_ratios_without_a_native_baseline_and_the_section_says_why() -> None:
    only_bridge = [s for s in run() if s.labels["layer"] == "bridge"]
    assert hadoop_table(only_bridge) is None
    section = render_hadoop(only_bridge)
    assert "<table" not in section and "No ratios to native" in section
    assert render_hadoop([s for s in run() if s.labels.get("workload") != "hadoop"]) == ""
