"""Parsers of the hadoop workload on real outputs recorded from Hadoop 3.4.2 (tests/data/hadoop)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetbench.workloads.hadoop.parse import (
    counter_totals,
    job_outcomes,
    parse_counters,
    parse_dfsio,
    parse_mrbench,
    parse_nnbench,
    parse_pi,
    parse_teravalidate,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "hadoop"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_teragen_counters() -> None:
    text = read("teragen.err")
    jobs = parse_counters(text)
    assert len(jobs) == 1
    assert jobs[0].get("HDFS: Number of bytes written") == 20_000_000
    assert jobs[0].get("Launched map tasks") == 2
    assert jobs[0].groups["org.apache.hadoop.examples.terasort.TeraGen$Counters"]["CHECKSUM"] > 0
    totals = counter_totals(jobs)
    assert totals["hdfs_written_bytes"] == (20_000_000.0, "B")
    assert totals["map_time_ms"][1] == "ms"
    assert "shuffle_bytes" not in totals  # map-only job
    done, failed = job_outcomes(text)
    assert len(done) == 1 and failed == []


def test_terasort_counters_have_shuffle_and_reduce() -> None:
    totals = counter_totals(parse_counters(read("terasort.err")))
    assert totals["hdfs_read_bytes"][0] >= 20_000_000
    assert totals["hdfs_written_bytes"][0] == 20_000_000
    assert totals["shuffle_bytes"][0] > 20_000_000  # records plus framing
    assert totals["reduce_time_ms"][0] > 0
    assert totals["reduce_tasks_count"][0] == 2


def test_mrbench_counters_summed_over_runs() -> None:
    text = read("mrbench.err")
    jobs = parse_counters(text)
    assert len(jobs) == 2
    totals = counter_totals(jobs)
    assert totals["map_tasks_count"][0] == 4
    assert len(job_outcomes(text)[0]) == 2


def test_failed_job_detected() -> None:
    text = ("2026-11-22 06:20:42,380 INFO mapreduce.Job: Job job_1795327635062_0007 failed with "
            "state FAILED due to: Task failed task_1795327635062_0007_m_000000\n")
    done, failed = job_outcomes(text)
    assert done == [] and failed == ["job_1795327635062_0007: FAILED"]


def test_dfsio_result_file() -> None:
    results = parse_dfsio(read("dfsio-results.txt"))
    assert [r.mode for r in results] == ["write", "read"]
    write, rd = results
    assert write.files == 4 and write.total_mb == 16
    assert write.throughput_mb_s == pytest.approx(18.24)
    assert write.avg_io_rate_mb_s == pytest.approx(21.6)
    assert write.exec_time_s == pytest.approx(23.89)
    assert rd.throughput_mb_s == pytest.approx(285.71)
    assert rd.avg_io_rate_mb_s == pytest.approx(301.17)


def test_dfsio_counters() -> None:
    totals = counter_totals(parse_counters(read("dfsio-write.err")))
    assert totals["hdfs_written_bytes"][0] >= 16 * 1024 * 1024


def test_teravalidate_valid_report() -> None:
    verdict = parse_teravalidate(read("teravalidate-report.txt"))
    assert verdict.valid and verdict.checksum == "186474c982b29" and verdict.errors == []


def test_teravalidate_errors_make_it_invalid() -> None:
    # TeraValidate writes "error\t..." / "misorder ..." lines next to the checksum when the
    # output is unsorted (shape from TeraValidate.java; not recorded: our runs sort fine).
    report = "error\tmisorder in part-r-00001 between 0a1b and 0a1a\nchecksum\t186474c982b29\n"
    verdict = parse_teravalidate(report)
    assert not verdict.valid and len(verdict.errors) == 1
    assert not parse_teravalidate("").valid  # no checksum line: nothing was validated


def test_pi_output() -> None:
    result = parse_pi(read("pi.out"))
    assert result is not None
    assert result.estimate == pytest.approx(3.144)
    assert result.job_s == pytest.approx(24.989)
    assert parse_pi("nothing here") is None


def test_nnbench_summary() -> None:
    stats = parse_nnbench(read("nnbench.err"))
    assert stats["nnbench_create_write_tps"] == 90
    assert stats["nnbench_avg_exec_ms"] == pytest.approx(16.445)
    assert stats["nnbench_avg_create_write_latency_ms"] == pytest.approx(9.715)
    assert stats["nnbench_successful_ops_count"] == 200
    assert stats["nnbench_exceptions_count"] == 0


def test_mrbench_table() -> None:
    stats = parse_mrbench(read("mrbench.out"))
    assert stats == {"mrbench_data_lines_count": 1, "mrbench_maps_count": 2,
                     "mrbench_reduces_count": 1, "mrbench_avg_job_ms": 19161}
    assert parse_mrbench("") == {}


def test_wordcount_counters() -> None:
    totals = counter_totals(parse_counters(read("wordcount.err")))
    assert totals["hdfs_read_bytes"][0] >= 20_000_000
    assert totals["shuffle_bytes"][0] > 0
