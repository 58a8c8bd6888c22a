"""The ``hadoop`` Workload: start a cluster in ``prepare``, run the benchmarks, stop it.

Samples (labels: ``benchmark`` and, for DataNode/NodeManager figures, ``role``/``node``):

- per benchmark: ``elapsed_s``; ``throughput_bytes_per_s`` and
  ``throughput_per_node_bytes_per_s`` (bytes the benchmark moves / elapsed, / workers) where
  it has a data size; summed job counters (``hdfs_read_bytes``, ``hdfs_written_bytes``,
  ``shuffle_bytes``, ``map_time_ms``, ``reduce_time_ms``, ``task_cpu_time_ms``, ...);
  tool figures (``dfsio_throughput_mib_per_s``, ``dfsio_avg_io_rate_mib_per_s``,
  ``nnbench_create_write_tps``, ``mrbench_avg_job_ms``, ``pi_estimate``, ``teravalidate_valid``);
- per trial: ``hadoop_startup_s``, ``hadoop_workers_count``, ``hadoop_block_size_bytes``, the
  memory plan (``hadoop_heap_bytes`` per role, ``hadoop_container_bytes`` per kind,
  ``hadoop_nm_capacity_bytes``, ``hadoop_estimated_peak_bytes``) and each daemon's measured
  peak RSS (``hadoop_daemon_peak_rss_bytes``, VmHWM) at the end of the run.

Raw: each client's output, TestDFSIO's result file, the TeraValidate report, and (under
``raw_dir/hadoop``) every node's configuration and daemon logs plus ``memory.json``.

A trial takes minutes, so the workload says on stderr when its cluster is ready and when each
benchmark is done (``progress``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from vnetbench.errors import WorkloadError
from vnetbench.results.model import Sample
from vnetbench.workloads.base import Entry, WorkloadBase, registry_entry
from vnetbench.workloads.hadoop.benchmarks import Bench, Outcome
from vnetbench.workloads.hadoop.cluster import HadoopCluster
from vnetbench.workloads.hadoop.install import hadoop_home
from vnetbench.workloads.hadoop.options import HadoopOptions, MiB

if TYPE_CHECKING:
    from vnetbench.workloads.labview import LabView


def outcome_samples(out: Outcome, workers: int) -> list[Sample]:
    labels = {"benchmark": out.benchmark}
    samples = [Sample("elapsed_s", out.elapsed_s, "s", dict(labels))]
    if out.data_bytes is not None and out.elapsed_s > 0:
        rate = out.data_bytes / out.elapsed_s
        samples += [Sample("throughput_bytes_per_s", rate, "B/s", dict(labels)),
                    Sample("throughput_per_node_bytes_per_s", rate / max(1, workers), "B/s",
                           dict(labels)),
                    Sample("data_bytes", float(out.data_bytes), "B", dict(labels))]
    samples += [Sample(metric, value, unit, dict(labels))
                for metric, (value, unit) in out.counters.items()]
    samples += [Sample(metric, value, unit, dict(labels)) for metric, value, unit in out.extra]
    samples.append(Sample("jobs_count", float(out.jobs), "count", dict(labels)))
    return samples


def stderr_line(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class HadoopWorkload(WorkloadBase):
    """A Hadoop cluster on the lab (master = ``lab.nodes[0]``) and its benchmarks."""

    name = "hadoop"

    def __init__(self, options: HadoopOptions,
                 progress: Callable[[str], None] = stderr_line) -> None:
        self.options = options
        self.progress = progress
        self.cluster: HadoopCluster | None = None

    def prepare(self, lab: LabView) -> None:
        home = hadoop_home()
        cluster = HadoopCluster(lab, self.options, home)
        self.cluster = cluster
        try:
            cluster.start()
        except BaseException:
            cluster.stop()
            self.cluster = None
            raise
        self.progress(f"  hadoop: {len(cluster.workers)} workers ready in "
                      f"{cluster.startup_s:.1f}s")

    def run(self, lab: LabView, raw_dir: Path) -> list[Sample]:
        cluster = self.cluster
        if cluster is None:
            raise WorkloadError("hadoop: run() before prepare()")
        raw_dir.mkdir(parents=True, exist_ok=True)
        workers = len(cluster.workers)
        samples = self._setup_samples(cluster)
        bench = Bench(cluster, raw_dir)
        try:
            for name in self.options.benchmarks:
                for out in bench.runner(name)():
                    samples += outcome_samples(out, workers)
                    self.progress(f"  hadoop: {out.benchmark} {out.elapsed_s:.1f}s")
            for role, node, rss in cluster.peak_rss():
                samples.append(Sample("hadoop_daemon_peak_rss_bytes", float(rss), "B",
                                      {"role": role, "node": node}))
        finally:
            cluster.keep_logs(raw_dir)
        return samples

    def _setup_samples(self, cluster: HadoopCluster) -> list[Sample]:
        mem = cluster.spec.memory
        samples = [
            Sample("hadoop_startup_s", cluster.startup_s, "s"),
            Sample("hadoop_workers_count", float(len(cluster.workers)), "count"),
            Sample("hadoop_block_size_bytes", float(cluster.spec.block_size), "B"),
            Sample("hadoop_replication_count", float(self.options.replication), "count"),
            Sample("hadoop_nm_capacity_bytes", float(mem.nm_capacity_mib * MiB), "B"),
            Sample("hadoop_estimated_peak_bytes", float(mem.estimated_peak_mib() * MiB), "B"),
        ]
        samples += [Sample("hadoop_heap_bytes", float(mib * MiB), "B", {"role": role})
                    for role, mib in mem.heaps.items()]
        samples += [Sample("hadoop_container_bytes", float(mib * MiB), "B", {"kind": kind})
                    for kind, mib in (("map", mem.map_mib), ("reduce", mem.reduce_mib),
                                      ("am", mem.am_mib))]
        return samples

    def cleanup(self, lab: LabView) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None


HADOOP_WORKLOADS: dict[str, Entry] = {
    "hadoop": registry_entry(HadoopOptions, HadoopWorkload),
}
"""Scenario key -> (options model, factory) for the registry."""

__all__ = ["HADOOP_WORKLOADS", "HadoopWorkload"]
