"""The benchmarks of the hadoop workload, each run as a job client on the master.

Every benchmark keeps its client's stdout/stderr in ``raw_dir`` (``<benchmark>.out`` and
``.err``; a client in a VM guest works in the master's directory there, and the files it
writes are read back through the guest's agent) and yields an ``Outcome``: wall-clock
``elapsed_s`` of its client(s), the bytes it moved (for throughput; None for pi, nnbench,
mrbench), the summed job counters, and tool-specific samples (TestDFSIO's own throughput
and average IO rate, NNBench TPS, MRBench average job time, Pi's estimate). Any failed job
raises WorkloadError.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vnetbench.errors import WorkloadError
from vnetbench.workloads.hadoop.cluster import GUEST_JVM_S, GUEST_LOOK_S, HadoopCluster
from vnetbench.workloads.hadoop.corpus import write_corpus
from vnetbench.workloads.hadoop.options import HadoopOptions, MiB
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

EX = "org.apache.hadoop.examples"
TERAGEN = f"{EX}.terasort.TeraGen"
TERASORT = f"{EX}.terasort.TeraSort"
TERAVALIDATE = f"{EX}.terasort.TeraValidate"
WORDCOUNT = f"{EX}.WordCount"
PI = f"{EX}.QuasiMonteCarlo"
TESTDFSIO = "org.apache.hadoop.fs.TestDFSIO"
NNBENCH = "org.apache.hadoop.hdfs.NNBench"
MRBENCH = "org.apache.hadoop.mapred.MRBench"
FSSHELL = "org.apache.hadoop.fs.FsShell"

TERA_IN, TERA_OUT, TERA_REPORT = "/bench/teragen", "/bench/terasort", "/bench/teravalidate"
ROW = 100
"""Bytes per TeraGen row."""


@dataclass
class Outcome:
    benchmark: str
    elapsed_s: float
    data_bytes: int | None
    counters: dict[str, tuple[float, str]] = field(default_factory=dict)
    extra: list[tuple[str, float, str]] = field(default_factory=list)
    jobs: int = 0


@dataclass
class Bench:
    cluster: HadoopCluster
    raw_dir: Path

    def __post_init__(self) -> None:
        # absolute: a client runs in this directory and is given files in it by path (a
        # relative --out would name them twice over, TestDFSIO's -resFile among them)
        self.raw_dir = self.raw_dir.absolute()

    @property
    def client_dir(self) -> Path:
        """Where the job clients run and write their files: ``raw_dir`` on this host, the
        master's directory in its guest."""
        if self.cluster.guests:
            return self.cluster.node_spec(self.cluster.master).root
        return self.raw_dir

    def remove_client_file(self, path: Path) -> None:
        if self.cluster.guests:
            self.cluster.master.run(["rm", "-f", str(path)], timeout=GUEST_LOOK_S, check=False)
        else:
            path.unlink(missing_ok=True)

    @property
    def options(self) -> HadoopOptions:
        return self.cluster.options

    @property
    def workers(self) -> int:
        return len(self.cluster.workers)

    def job(self, name: str, main: str, args: list[str],
            expect_jobs: int = 1) -> tuple[subprocess.CompletedProcess[str], Outcome]:
        """Run one client, keep its output, check its jobs, sum their counters."""
        self.raw_dir.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        result = self.cluster.client(main, args, timeout=self.options.job_timeout,
                                     cwd=self.client_dir, check=False)
        elapsed = time.monotonic() - start
        (self.raw_dir / f"{name}.out").write_text(result.stdout or "")
        (self.raw_dir / f"{name}.err").write_text(result.stderr or "")
        text = (result.stdout or "") + "\n" + (result.stderr or "")
        done, failed = job_outcomes(text)
        if result.returncode != 0 or failed or len(done) < expect_jobs:
            tail = " | ".join(ln.strip() for ln in text.strip().splitlines()
                              if "Exception" in ln or "ERROR" in ln or "failed" in ln)[-600:]
            self.cluster.check_alive()
            raise WorkloadError(
                f"hadoop {name} failed (exit {result.returncode}, {len(done)} of "
                f"{expect_jobs} job(s) succeeded{', failed: ' + ', '.join(failed) if failed else ''}"
                f"): {tail or ' | '.join(text.strip().splitlines()[-5:])}")
        counters = counter_totals(parse_counters(text))
        return result, Outcome(name, elapsed, None, counters, jobs=len(done))

    # ---- benchmarks -----------------------------------------------------------------
    def teragen(self) -> list[Outcome]:
        rows = max(1, self.options.data // ROW)
        maps = self.options.maps or self.workers
        _, out = self.job("teragen", TERAGEN,
                          [f"-Dmapreduce.job.maps={maps}", str(rows), TERA_IN])
        out.data_bytes = rows * ROW
        return [out]

    def terasort(self) -> list[Outcome]:
        reduces = self.options.reduces or self.workers
        _, out = self.job("terasort", TERASORT,
                          [f"-Dmapreduce.job.reduces={reduces}", TERA_IN, TERA_OUT])
        out.data_bytes = max(1, self.options.data // ROW) * ROW
        return [out]

    def teravalidate(self) -> list[Outcome]:
        _, out = self.job("teravalidate", TERAVALIDATE, [TERA_OUT, TERA_REPORT])
        report = self.cluster.read_text(f"{TERA_REPORT}/part-r-00000")
        (self.raw_dir / "teravalidate-report.txt").write_text(report)
        verdict = parse_teravalidate(report)
        if not verdict.valid:
            raise WorkloadError("teravalidate: the sorted output is not valid: "
                                + (" | ".join(verdict.errors[:3]) or "no checksum line"))
        out.data_bytes = max(1, self.options.data // ROW) * ROW
        out.extra.append(("teravalidate_valid", 1.0, "bool"))
        return [out]

    def dfsio(self) -> list[Outcome]:
        o = self.options.dfsio
        files = o.files or 2 * self.workers
        size_mb = max(1, round((o.file_size or self.options.data // files) / MiB))
        result_file = self.client_dir / "dfsio-results.txt"
        self.remove_client_file(result_file)
        outcomes = []
        for mode in ("write", "read"):
            _, out = self.job(f"dfsio-{mode}", TESTDFSIO,
                              ["-Dtest.build.data=/bench/dfsio", f"-{mode}", "-nrFiles",
                               str(files), "-size", f"{size_mb}MB", "-resFile", str(result_file)])
            try:
                results = self.cluster.master.read_file(result_file)
            except FileNotFoundError:
                results = ""
            if self.cluster.guests:
                (self.raw_dir / result_file.name).write_text(results)
            parsed = [r for r in parse_dfsio(results) if r.mode == mode]
            if not parsed:
                raise WorkloadError(f"TestDFSIO {mode}: no result in {result_file.name}")
            r = parsed[-1]
            out.data_bytes = files * size_mb * MiB
            out.extra += [("dfsio_throughput_mib_per_s", r.throughput_mb_s, "MiB/s"),
                          ("dfsio_avg_io_rate_mib_per_s", r.avg_io_rate_mb_s, "MiB/s"),
                          ("dfsio_io_rate_stddev_mib_per_s", r.io_rate_stddev, "MiB/s"),
                          ("dfsio_exec_s", r.exec_time_s, "s"),
                          ("dfsio_files_count", float(r.files), "count")]
            outcomes.append(out)
        return outcomes

    def wordcount(self) -> list[Outcome]:
        o = self.options.wordcount
        size = o.size or self.options.data
        local = self.cluster.node_spec(self.cluster.master).root / "wordcount-input.txt"
        if self.cluster.guests:  # written where the client reads it, in the master's guest
            self.cluster.master.run([sys.executable, "-P", "-m", "vnetbench.workloads.hadoop.corpus",
                                     str(local), str(size)], timeout=self.options.job_timeout)
        else:
            write_corpus(local, size)
        self.cluster.client(FSSHELL, ["-mkdir", "-p", "/bench/wordcount-in"],
                            timeout=GUEST_JVM_S if self.cluster.guests else 120.0)
        self.cluster.client(FSSHELL, ["-put", "-f", str(local), "/bench/wordcount-in/"],
                            timeout=self.options.job_timeout)
        self.remove_client_file(local)
        reduces = o.reduces or self.workers
        _, out = self.job("wordcount", WORDCOUNT,
                          [f"-Dmapreduce.job.reduces={reduces}", "/bench/wordcount-in",
                           "/bench/wordcount-out"])
        out.data_bytes = size
        return [out]

    def nnbench(self) -> list[Outcome]:
        o = self.options.nnbench
        result, out = self.job("nnbench", NNBENCH, [
            "-operation", "create_write", "-maps", str(o.maps), "-reduces", str(o.reduces),
            "-numberOfFiles", str(o.files), "-blockSize", "1048576", "-bytesPerChecksum", "512",
            "-bytesToWrite", "0", "-baseDir", "/bench/nnbench",
            "-startTime", str(int(time.time()))])
        return _with_stats("nnbench", out, parse_nnbench(_output(result)))

    def mrbench(self) -> list[Outcome]:
        o = self.options.mrbench
        result, out = self.job("mrbench", MRBENCH, [
            "-baseDir", "/bench/mrbench", "-numRuns", str(o.runs), "-maps", str(o.maps),
            "-reduces", str(o.reduces), "-inputLines", str(o.lines)], expect_jobs=o.runs)
        return _with_stats("mrbench", out, parse_mrbench(_output(result)))

    def pi(self) -> list[Outcome]:
        o = self.options.pi
        result, out = self.job("pi", PI, [str(o.maps), str(o.samples)])
        parsed = parse_pi(result.stdout or "")
        if parsed is None:
            raise WorkloadError("pi: no estimate in its output")
        out.extra.append(("pi_estimate", parsed.estimate, "1"))
        return [out]

    def runner(self, name: str) -> Callable[[], list[Outcome]]:
        fn: Callable[[], list[Outcome]] = getattr(self, name)
        return fn


def _output(result: subprocess.CompletedProcess[str]) -> str:
    """A client's stdout and stderr, where a benchmark's figures may be written."""
    return (result.stdout or "") + "\n" + (result.stderr or "")


def _with_stats(name: str, out: Outcome, stats: Mapping[str, float]) -> list[Outcome]:
    """``out`` with the figures a benchmark reported (WorkloadError when it reported none)."""
    if not stats:
        raise WorkloadError(f"{name}: no results in its output")
    out.extra += [(k, v, _unit(k)) for k, v in stats.items()]
    return [out]


def _unit(metric: str) -> str:
    for suffix, unit in (("_ms", "ms"), ("_count", "count"), ("_tps", "1/s")):
        if metric.endswith(suffix):
            return unit
    return "1"
