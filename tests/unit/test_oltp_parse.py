"""Unit tests of the sysbench report parser of the oltp workload, on recorded real output."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetbench.workloads.oltp import (
    OLTP_WORKLOADS,
    OltpOptions,
    histogram_percentile,
    parse_histogram,
    parse_sysbench,
    to_samples,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "oltp"


def test_loopback_run_report() -> None:
    text = (DATA / "point_select_4threads_loopback.txt").read_text()
    out = parse_sysbench(text)
    assert out["transactions"] == 142093
    assert out["tps"] == pytest.approx(47299.83)
    assert out["qps"] == pytest.approx(47299.83)
    assert out["errors"] == 0 and out["reconnects"] == 0
    assert out["total_time_s"] == pytest.approx(3.0032)
    assert out["events"] == 142093
    assert out["latency_p95_ms"] == pytest.approx(0.16)
    assert out["latency_avg_ms"] == pytest.approx(0.08)
    # mean from sum/events keeps the digits sysbench rounds away
    assert out["latency_mean_ms"] == pytest.approx(11941.38 / 142093)
    assert out["latency_min_ms"] <= out["latency_p50_ms"] <= out["latency_p95_ms"]
    assert out["latency_p95_ms"] <= out["latency_p99_ms"] <= out["latency_max_ms"]


def test_histogram_counts_match_events() -> None:
    text = (DATA / "point_select_4threads_loopback.txt").read_text()
    rows = parse_histogram(text)
    assert rows[0] == (0.024, 12)
    assert rows[-1] == (7.985, 1)
    assert sum(count for _, count in rows) == 142093
    assert [v for v, _ in rows] == sorted(v for v, _ in rows)


def test_histogram_percentile() -> None:
    rows = [(1.0, 50), (2.0, 40), (3.0, 9), (10.0, 1)]
    assert histogram_percentile(rows, 50) == 1.0
    assert histogram_percentile(rows, 90) == 2.0
    assert histogram_percentile(rows, 99) == 3.0
    assert histogram_percentile(rows, 100) == 10.0
    assert histogram_percentile([], 99) is None


def test_lab_nat_client_report() -> None:
    out = parse_sysbench((DATA / "point_select_nat_client_n1.txt").read_text())
    assert out["tps"] > 0 and out["qps"] >= out["tps"]
    assert 0 < out["latency_p50_ms"] < out["latency_p99_ms"]
    assert out["latency_p95_ms"] <= out["latency_p99_ms"] * 1.05


def test_failed_run_raises() -> None:
    with pytest.raises(ValueError, match=r"unable to connect|Thread initialization"):
        parse_sysbench((DATA / "connect_refused.txt").read_text())


def test_prepare_output_is_not_a_report() -> None:
    with pytest.raises(ValueError):
        parse_sysbench((DATA / "prepare_2tables.txt").read_text())


def test_samples_carry_units() -> None:
    out = parse_sysbench((DATA / "point_select_4threads_loopback.txt").read_text())
    samples = {s.metric: s for s in to_samples(out, {"client": "n1"})}
    assert set(samples) == {"tps", "qps", "errors", "reconnects", "latency_mean_ms",
                            "latency_p50_ms", "latency_p95_ms", "latency_p99_ms"}
    assert samples["latency_p99_ms"].unit == "ms"
    assert samples["tps"].labels == {"client": "n1"}


def test_options() -> None:
    o = OltpOptions.model_validate({"threads": 8, "table_size": 10000, "duration": "10s"})
    assert o.duration == 10.0 and o.clients == 1 and o.tables == 1
    with pytest.raises(ValueError):
        OltpOptions.model_validate({"thread": 8})
    model, create = OLTP_WORKLOADS["oltp"]
    assert model is OltpOptions
    assert create(o).name == "oltp"
