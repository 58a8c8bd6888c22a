"""Parsers of what Hadoop's tools print: job counters, TestDFSIO results, the TeraValidate
verdict, Pi's estimate, NNBench and MRBench summaries. Pure functions over text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

COUNTERS_HEAD = re.compile(r"INFO mapreduce\.Job: Counters: \d+\s*$")
JOB_DONE = re.compile(r"Job (job_\d+_\d+) completed successfully")
JOB_FAILED = re.compile(r"Job (job_\d+_\d+) failed with state (\w+)")

COUNTER_SAMPLES: dict[str, tuple[str, str]] = {
    "HDFS: Number of bytes read": ("hdfs_read_bytes", "B"),
    "HDFS: Number of bytes written": ("hdfs_written_bytes", "B"),
    "FILE: Number of bytes read": ("local_read_bytes", "B"),
    "FILE: Number of bytes written": ("local_written_bytes", "B"),
    "Reduce shuffle bytes": ("shuffle_bytes", "B"),
    "Total time spent by all map tasks (ms)": ("map_time_ms", "ms"),
    "Total time spent by all reduce tasks (ms)": ("reduce_time_ms", "ms"),
    "CPU time spent (ms)": ("task_cpu_time_ms", "ms"),
    "GC time elapsed (ms)": ("task_gc_time_ms", "ms"),
    "Launched map tasks": ("map_tasks_count", "count"),
    "Launched reduce tasks": ("reduce_tasks_count", "count"),
    "Data-local map tasks": ("data_local_map_tasks_count", "count"),
    "Spilled Records": ("spilled_records_count", "count"),
}
"""Counter name -> (sample metric, unit); summed over the jobs of a benchmark."""


@dataclass
class JobCounters:
    """Counters of one job: group -> counter name -> value."""

    groups: dict[str, dict[str, int]] = field(default_factory=dict)

    def get(self, name: str) -> int | None:
        for counters in self.groups.values():
            if name in counters:
                return counters[name]
        return None


def parse_counters(text: str) -> list[JobCounters]:
    """Every ``Counters: N`` block the job client logged, in order."""
    jobs: list[JobCounters] = []
    current: JobCounters | None = None
    group = ""
    for line in text.splitlines():
        if COUNTERS_HEAD.search(line):
            current = JobCounters()
            jobs.append(current)
            group = ""
            continue
        if current is None:
            continue
        if line.startswith("\t\t") and "=" in line:
            name, _, value = line.strip().rpartition("=")
            try:
                current.groups.setdefault(group, {})[name.strip()] = int(value.strip())
            except ValueError:
                current = None
        elif line.startswith("\t") and line.strip():
            group = line.strip()
            current.groups.setdefault(group, {})
        else:
            current = None
    return jobs


def counter_totals(jobs: list[JobCounters]) -> dict[str, tuple[float, str]]:
    """Metric -> (sum over jobs, unit) for the counters of ``COUNTER_SAMPLES``."""
    totals: dict[str, tuple[float, str]] = {}
    for name, (metric, unit) in COUNTER_SAMPLES.items():
        values = [v for job in jobs if (v := job.get(name)) is not None]
        if values:
            totals[metric] = (float(sum(values)), unit)
    return totals


def job_outcomes(text: str) -> tuple[list[str], list[str]]:
    """(ids of jobs that completed successfully, "id: state" of jobs that failed)."""
    done = JOB_DONE.findall(text)
    failed = [f"{job}: {state}" for job, state in JOB_FAILED.findall(text)]
    return done, failed


@dataclass(frozen=True)
class DfsioResult:
    mode: str
    files: int
    total_mb: float
    throughput_mb_s: float
    avg_io_rate_mb_s: float
    io_rate_stddev: float
    exec_time_s: float


_DFSIO_KEYS = {
    "Number of files": "files", "Total MBytes processed": "total_mb",
    "Throughput mb/sec": "throughput_mb_s", "Average IO rate mb/sec": "avg_io_rate_mb_s",
    "IO rate std deviation": "io_rate_stddev", "Test exec time sec": "exec_time_s",
}


def parse_dfsio(text: str) -> list[DfsioResult]:
    """The ``----- TestDFSIO ----- : write|read`` sections of a TestDFSIO result file."""
    results: list[DfsioResult] = []
    mode: str | None = None
    values: dict[str, float] = {}

    def flush() -> None:
        if mode is not None and {"files", "throughput_mb_s", "avg_io_rate_mb_s"} <= set(values):
            results.append(DfsioResult(
                mode, int(values["files"]), values.get("total_mb", 0.0),
                values["throughput_mb_s"], values["avg_io_rate_mb_s"],
                values.get("io_rate_stddev", 0.0), values.get("exec_time_s", 0.0)))

    for line in text.splitlines():
        head = re.search(r"----- TestDFSIO ----- :\s*(\S+)", line)
        if head:
            flush()
            mode, values = head.group(1), {}
            continue
        if ":" in line and mode is not None:
            key, _, value = line.partition(":")
            field_name = _DFSIO_KEYS.get(key.strip())
            if field_name:
                try:
                    values[field_name] = float(value.strip().replace(",", ""))
                except ValueError:
                    continue
    flush()
    return results


@dataclass(frozen=True)
class TeraValidateVerdict:
    valid: bool
    checksum: str | None
    errors: list[str]


def parse_teravalidate(text: str) -> TeraValidateVerdict:
    """TeraValidate's output file: one ``checksum\\t<hex>`` line, ``error\\t...`` lines if bad."""
    checksum = None
    errors = []
    for line in text.splitlines():
        key, _, value = line.partition("\t")
        if key == "checksum":
            checksum = value.strip()
        elif key.startswith("error") or key.startswith("misorder"):
            errors.append(line.strip())
    return TeraValidateVerdict(checksum is not None and not errors, checksum, errors)


@dataclass(frozen=True)
class PiResult:
    estimate: float
    job_s: float | None


def parse_pi(text: str) -> PiResult | None:
    m = re.search(r"Estimated value of Pi is\s+([0-9.]+)", text)
    if not m:
        return None
    t = re.search(r"Job Finished in\s+([0-9.]+)\s+seconds", text)
    return PiResult(float(m.group(1)), float(t.group(1)) if t else None)


def parse_nnbench(text: str) -> dict[str, float]:
    """NNBench summary lines ``Name: value`` (e.g. ``TPS: Create/Write/Close``)."""
    wanted = {
        "TPS: Create/Write/Close": "nnbench_create_write_tps",
        "Avg exec time (ms): Create/Write/Close": "nnbench_avg_exec_ms",
        "Avg Lat (ms): Create/Write": "nnbench_avg_create_write_latency_ms",
        "Avg Lat (ms): Close": "nnbench_avg_close_latency_ms",
        "Successful file operations": "nnbench_successful_ops_count",
        "# maps that missed the barrier": "nnbench_missed_barrier_count",
        "# exceptions": "nnbench_exceptions_count",
    }
    out: dict[str, float] = {}
    for line in text.splitlines():
        body = re.sub(r"^.*?INFO hdfs\.NNBench:\s*", "", line).strip()
        for key, metric in wanted.items():
            if body.startswith(key + ":"):
                try:
                    out[metric] = float(body[len(key) + 1:].strip())
                except ValueError:
                    continue
    return out


def parse_mrbench(text: str) -> dict[str, float]:
    """MRBench's table ``DataLines Maps Reduces AvgTime (milliseconds)`` and its row."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "AvgTime (milliseconds)" in line and i + 1 < len(lines):
            fields = lines[i + 1].split()
            if len(fields) >= 4:
                try:
                    return {"mrbench_data_lines_count": float(fields[0]),
                            "mrbench_maps_count": float(fields[1]),
                            "mrbench_reduces_count": float(fields[2]),
                            "mrbench_avg_job_ms": float(fields[3])}
                except ValueError:
                    return {}
    return {}
