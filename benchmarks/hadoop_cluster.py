#!/usr/bin/env python3
"""Hadoop cluster start-up and memory: with the class-data-sharing archive vs without.

For each worker count, builds a bridge lab of workers + 1 nodes, starts the cluster
(NameNode + ResourceManager on the master, DataNode + NodeManager per worker) and times it
until every DataNode is registered and every NodeManager RUNNING, then runs one TeraGen with
a map per worker so that containers run on every worker. Meanwhile a thread samples the
host's memory in use (MemTotal - MemAvailable). Prints start-up, the host's peak memory above
its level before the lab, each role's largest daemon peak RSS (VmHWM), and the memory plan's
estimate. The same cluster without the archive (``VNETBENCH_HADOOP_CDS=0``: what a plain
``java -cp`` start costs) is the comparison, interleaved in the same run.
Targets: 4 workers ready in < 60 s; 16 workers' peak fits the host's memory.
Run as root after scripts/setup.sh:
``.venv/bin/python benchmarks/hadoop_cluster.py [--workers 4,16] [--repeat 1]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from vnetbench.backends.lab import open_lab
from vnetbench.lab.spec import LabSpec
from vnetbench.results.model import Sample
from vnetbench.workloads.hadoop.options import HadoopOptions
from vnetbench.workloads.hadoop.workload import HadoopWorkload

GIB = 1 << 30


def memory_in_use() -> int:
    info = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, value = line.split(":", 1)
            info[key] = int(value.split()[0]) * 1024
    return info["MemTotal"] - info["MemAvailable"]


class PeakMemory:
    """Highest ``memory_in_use`` seen while the context is open (sampled every 0.2 s)."""

    def __enter__(self) -> PeakMemory:
        self.base = memory_in_use()
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, memory_in_use())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Result:
    startup_s: float
    peak_above_base: int
    role_rss: dict[str, int]
    estimate: int


def one_cluster(workers: int, cds: bool) -> Result:
    os.environ["VNETBENCH_HADOOP_CDS"] = "1" if cds else "0"
    options = HadoopOptions.model_validate({
        "benchmarks": ["teragen"], "data": f"{4 * workers}MB", "block_size": "4M",
        "replication": 2, "start_timeout": "10m"})
    workload = HadoopWorkload(options)
    with tempfile.TemporaryDirectory() as raw, PeakMemory() as mem, \
            open_lab(LabSpec(layer="bridge", hosts=1, nodes=workers + 1)) as lab:
        workload.prepare(lab)
        try:
            samples = workload.run(lab, Path(raw))
        finally:
            workload.cleanup(lab)
    role_rss: dict[str, int] = {}
    for s in samples:
        if s.metric == "hadoop_daemon_peak_rss_bytes":
            role = s.labels["role"]
            role_rss[role] = max(role_rss.get(role, 0), int(s.value))
    return Result(_one(samples, "hadoop_startup_s"), mem.peak - mem.base, role_rss,
                  int(_one(samples, "hadoop_estimated_peak_bytes")))


def _one(samples: list[Sample], metric: str) -> float:
    return next(s.value for s in samples if s.metric == metric)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="4,16")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    sizes = [int(n) for n in args.workers.split(",")]
    runs: dict[tuple[int, bool], list[Result]] = {}
    for _ in range(args.repeat):
        for n in sizes:  # interleaved: drift hits both variants alike
            for cds in (True, False):
                r = one_cluster(n, cds)
                runs.setdefault((n, cds), []).append(r)
                print(f"  {n} workers, archive {'on ' if cds else 'off'}: start-up "
                      f"{r.startup_s:.1f} s, peak +{r.peak_above_base / GIB:.2f} GiB",
                      flush=True)
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    ok = True
    print(f"{'workers':>7} {'start s':>8} {'no-CDS s':>9} {'ratio':>6} {'peak GiB':>9} "
          f"{'plan GiB':>9}  target")
    for n in sizes:
        with_cds, without = runs[(n, True)], runs[(n, False)]
        a = statistics.median(r.startup_s for r in with_cds)
        b = statistics.median(r.startup_s for r in without)
        peak = max(r.peak_above_base for r in with_cds + without)
        target = ""
        if n == 4:
            target = f"ready < 60 s: {'PASS' if a < 60 else 'FAIL'}"
            ok &= a < 60
        if n == 16:
            fits = peak < total
            target = f"fits {total / GIB:.0f} GiB: {'PASS' if fits else 'FAIL'}"
            ok &= fits
        print(f"{n:>7} {a:>8.1f} {b:>9.1f} {b / a:>5.1f}x {peak / GIB:>9.2f} "
              f"{with_cds[0].estimate / GIB:>9.2f}  {target}")
    for n in sizes:
        rss = runs[(n, True)][0].role_rss
        print(f"  {n} workers, largest peak RSS per daemon (MiB): "
              + ", ".join(f"{role} {v >> 20}" for role, v in sorted(rss.items())))
    print("start = until every DataNode is registered and every NodeManager RUNNING; ratio = "
          "without / with the archive; peak = host memory in use above its level before the "
          "lab, during start-up and one TeraGen with a map per worker.")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
