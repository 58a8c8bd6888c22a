"""Hadoop inside VM guests: a master guest and a worker guest of the ``vm`` backend on a bridge
(``vm-bridge``), each with a disk of its own (``resources.disk``: HDFS on it), under whatever
accelerator the machine gives its guests (TCG here), running TeraGen and Pi at their smallest
size; the job counters, the memory plan made for the guests' own memory, the daemons' peak RSS
read in the guests, and that no VM, TAP, namespace, disk, run directory or cluster process in
a guest is left.

Marked slow (outside the default suite: under TCG here the cluster took 128 s to start, TeraGen
202 s and Pi 211 s, the test 9 min 48 s): ``./scripts/test.sh --slow
tests/integration/test_hadoop_vm.py``. Needs root, QEMU, the guest kernel and the jar cache
(scripts/setup.sh).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from vnetbench.backends.lab import open_lab
from vnetbench.backends.vm.find import find_qemu
from vnetbench.backends.vm.guest_kernel import find_kernel
from vnetbench.errors import MissingToolError
from vnetbench.lab.spec import LabSpec
from vnetbench.lab.topology import Resources
from vnetbench.workloads.hadoop.install import hadoop_home
from vnetbench.workloads.hadoop.options import HadoopOptions, MiB
from vnetbench.workloads.hadoop.workload import HadoopWorkload

from ..conftest import qemu_guest_names
from .labtools import benchmark_value as value

pytestmark = [pytest.mark.root, pytest.mark.heavy, pytest.mark.slow]

GUEST_MEMORY = 2048 * MiB
GUEST_DISK = 2048 * MiB


def _need_parts() -> None:
    try:
        find_qemu()
        find_kernel()
        hadoop_home()
    except MissingToolError as exc:
        pytest.skip(str(exc))


def test_hadoop_cluster_in_vm_guests(tmp_path: Path) -> None:
    _need_parts()
    options = HadoopOptions.model_validate({
        "benchmarks": ["teragen", "pi"], "data": "1MiB", "block_size": "1M", "replication": 1,
        "maps": 1, "pi": {"maps": 1, "samples": 1000},
        "start_timeout": "1800s", "job_timeout": "1800s",
    })
    said: list[str] = []
    workload = HadoopWorkload(options, progress=said.append)
    started = time.monotonic()
    spec = LabSpec(layer="vm-bridge", hosts=1, nodes=2,
                   resources=Resources(memory=GUEST_MEMORY, disk=GUEST_DISK))
    with open_lab(spec) as lab:
        run_id = lab.run_id
        namespaces = lab.namespaces()
        assert len([g for g in qemu_guest_names() if g.startswith(f"vnb{run_id}-")]) == 2
        data_dir = Path(options.data_root) / run_id
        workload.prepare(lab)
        cluster = workload.cluster
        assert cluster is not None
        try:
            assert cluster.guests
            assert cluster.status() == (1, True, 1)
            # the plan was checked against each guest's own memory, as its kernel reports it
            guests = cluster.spec.memory.guests
            assert sorted((g.master, g.workers) for g in guests) == [(False, 1), (True, 0)]
            assert all(1800 < g.memory_mib <= 2048 for g in guests), guests
            # the daemons run in the guests, not on this host: their files are there
            worker = lab.nodes[1]
            dn_dir = cluster.node_spec(worker).root / "dfs"
            assert worker.run(["test", "-d", str(dn_dir)]).returncode == 0
            assert not (dn_dir / "data").exists()  # the host's copy of the tree has no blocks
            # ... on the guest's own disk, formatted and mounted at boot
            mount = worker.run(["findmnt", "-n", "-o", "SOURCE,FSTYPE", "--target", str(dn_dir)])
            assert mount.stdout.split() == ["/dev/vda", "ext4"], mount.stdout
            disks = data_dir / "disks"
            assert sorted(p.name for p in disks.iterdir()) == [f"vnb{run_id}-v0.img",
                                                               f"vnb{run_id}-v1.img"]
            samples = workload.run(lab, tmp_path)
        finally:
            workload.cleanup(lab)
        # nothing of the cluster is left in the guests while they still run
        for node in lab.nodes:
            assert cluster.guest_processes(node) == [], node.name
            assert node.run(["test", "-e", str(cluster.node_spec(node).root)],
                            check=False).returncode != 0
        assert not (data_dir / "hadoop").exists()
    elapsed = time.monotonic() - started
    assert not [g for g in qemu_guest_names() if g.startswith(f"vnb{run_id}-")]
    assert not any(os.path.exists(f"/run/netns/{ns}") for ns in namespaces)
    assert not data_dir.exists()  # the guests' disks went with the lab
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    assert f"vnb{run_id}" not in links.stdout

    assert value(samples, "hdfs_written_bytes", "teragen") == 1_048_500  # 10485 rows of 100 B
    assert value(samples, "map_tasks_count", "teragen") == 1
    assert value(samples, "jobs_count", "teragen") == 1
    assert value(samples, "map_tasks_count", "pi") == 1
    assert value(samples, "reduce_tasks_count", "pi") == 1
    assert 2.9 < value(samples, "pi_estimate", "pi") < 3.4
    for bench in ("teragen", "pi"):
        assert value(samples, "elapsed_s", bench) > 0
        assert value(samples, "task_cpu_time_ms", bench) > 0
    startup = next(s.value for s in samples if s.metric == "hadoop_startup_s")
    assert 0 < startup < options.start_timeout
    rss = {(s.labels["role"], s.labels["node"]) for s in samples
           if s.metric == "hadoop_daemon_peak_rss_bytes" and s.value > 50 * MiB}
    assert rss == {("namenode", "n0"), ("resourcemanager", "n0"), ("datanode", "n1"),
                   ("nodemanager", "n1")}, rss
    assert said[0].startswith("  hadoop: 1 workers ready in ")
    # the daemons' logs came back through their clients; the configuration is kept too
    assert "NameNode" in (tmp_path / "hadoop" / "n0" / "logs" / "namenode.out").read_text()
    assert (tmp_path / "hadoop" / "n1" / "conf" / "yarn-site.xml").is_file()
    print(f"hadoop in vm guests: startup {startup:.0f}s, teragen "
          f"{value(samples, 'elapsed_s', 'teragen'):.0f}s, pi {value(samples, 'elapsed_s', 'pi'):.0f}s, "
          f"test {elapsed:.0f}s")
