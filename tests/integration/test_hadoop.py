"""A real Hadoop 3.4.2 cluster in a bridge lab: master + 2 workers, small data.

TeraGen -> TeraSort -> TeraValidate (valid), TestDFSIO write and read, Pi; the workers'
interface counters show the replicated writes crossed the lab's network; afterwards no JVM,
directory or namespace of the run is left. Needs root and the jar cache (scripts/setup.sh).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from vnetbench.backends.lab import Lab, open_lab
from vnetbench.errors import MissingToolError, WorkloadError
from vnetbench.host.netns import netns_inode, pids_in_netns, read_in_netns
from vnetbench.lab.spec import LabSpec
from vnetbench.workloads.hadoop.install import hadoop_home
from vnetbench.workloads.hadoop.options import HadoopOptions
from vnetbench.workloads.hadoop.workload import HadoopWorkload

from .labtools import benchmark_value as value

pytestmark = pytest.mark.root


def _need_hadoop() -> None:
    try:
        hadoop_home()
    except MissingToolError as exc:
        pytest.skip(str(exc))


def iface_bytes(lab: Lab) -> dict[str, int]:
    """rx + tx bytes of each worker's lab interface (from /proc/net/dev in its namespace)."""
    out = {}
    for node in lab.nodes[1:]:
        for line in read_in_netns(node.netns, "net/dev").splitlines()[2:]:
            name, _, rest = line.partition(":")
            if name.strip() == node.ifname:
                fields = rest.split()
                out[node.name] = int(fields[0]) + int(fields[8])
    assert len(out) == len(lab.nodes) - 1, out
    return out


@pytest.mark.heavy
def test_hadoop_cluster_on_bridge(tmp_path: Path) -> None:
    _need_hadoop()
    options = HadoopOptions.model_validate({
        "benchmarks": ["teragen", "terasort", "teravalidate", "dfsio", "pi"],
        "data": "20MB", "block_size": "4M", "replication": 2,
        "dfsio": {"files": 2, "file_size": "4MB"}, "pi": {"maps": 2, "samples": 100},
    })
    said: list[str] = []
    workload = HadoopWorkload(options, progress=said.append)
    started = time.monotonic()
    scratch = set(Path(tempfile.gettempdir()).glob("jetty-*"))
    with open_lab(LabSpec(layer="bridge", hosts=1, nodes=3)) as lab:
        namespaces = lab.namespaces()
        data_dir = Path(options.data_root) / lab.run_id
        before = iface_bytes(lab)
        workload.prepare(lab)
        try:
            cluster = workload.cluster
            assert cluster is not None
            assert cluster.status() == (2, True, 2)
            # the NameNode started from a formatted directory the cache now keeps
            template = cluster.home.formatted_name_dir / "current" / "VERSION"
            assert "clusterID=" in template.read_text()
            assert len(cluster.daemons) == 2 + 2 * 2
            samples = workload.run(lab, tmp_path)
        finally:
            workload.cleanup(lab)
        after = iface_bytes(lab)
        # nothing of the cluster is left while the lab still stands
        inodes = {i for ns in namespaces if (i := netns_inode(ns)) is not None}
        assert pids_in_netns(inodes) == []
        assert not data_dir.exists()
        # the daemons' Jetty scratch directories stayed under the cluster's own tree
        assert set(Path(tempfile.gettempdir()).glob("jetty-*")) <= scratch
    assert not any(os.path.exists(f"/run/netns/{ns}") for ns in namespaces)
    elapsed = time.monotonic() - started

    assert value(samples, "teravalidate_valid", "teravalidate") == 1.0
    assert value(samples, "hdfs_written_bytes", "teragen") == 20_000_000
    assert value(samples, "shuffle_bytes", "terasort") > 20_000_000
    for bench in ("teragen", "terasort", "teravalidate", "dfsio-write", "dfsio-read", "pi"):
        assert value(samples, "elapsed_s", bench) > 0
    for bench in ("dfsio-write", "dfsio-read"):
        assert value(samples, "dfsio_throughput_mib_per_s", bench) > 0
        assert value(samples, "dfsio_avg_io_rate_mib_per_s", bench) > 0
    assert 3.0 < value(samples, "pi_estimate", "pi") < 3.3
    assert value(samples, "throughput_per_node_bytes_per_s", "teragen") == pytest.approx(
        value(samples, "throughput_bytes_per_s", "teragen") / 2)
    startup = next(s.value for s in samples if s.metric == "hadoop_startup_s")
    assert 0 < startup < options.start_timeout
    assert any(s.metric == "hadoop_daemon_peak_rss_bytes" for s in samples)
    assert (tmp_path / "teravalidate-report.txt").is_file()
    # progress while the trial runs: the cluster, then every benchmark as it finishes
    assert said[0].startswith("  hadoop: 2 workers ready in ")
    assert [line.split()[1] for line in said[1:]] == [
        "teragen", "terasort", "teravalidate", "dfsio-write", "dfsio-read", "pi"]
    assert (tmp_path / "hadoop" / "n0" / "conf" / "hdfs-site.xml").is_file()

    # Replicated writes: each block written on a worker keeps one replica there and sends
    # the other over the lab network (counted once as tx, once as rx), so the workers'
    # interfaces carry at least replication x the bytes TeraGen and TestDFSIO wrote.
    written = (value(samples, "hdfs_written_bytes", "teragen")
               + value(samples, "data_bytes", "dfsio-write"))
    crossed = sum(after[n] - before[n] for n in after)
    assert crossed >= options.replication * written, (crossed, written)
    print(f"hadoop bridge: startup {startup:.1f}s, test {elapsed:.0f}s, "
          f"crossed {crossed / 1e6:.1f} MB for {written / 1e6:.1f} MB written")


def test_hadoop_refuses_nat() -> None:
    _need_hadoop()
    with open_lab(LabSpec(layer="nat", hosts=1, nodes=2)) as lab:
        workload = HadoopWorkload(HadoopOptions())
        with pytest.raises(WorkloadError, match="does not support the 'nat' layer"):
            workload.prepare(lab)
        workload.cleanup(lab)
