"""Integration tests of the real-application workloads: MariaDB + sysbench and OpenMPI.

Each test builds a real lab (2 emulated hosts), runs the workload across nodes on different
hosts, checks that the traffic crossed the nodes' lab interfaces (byte counters read from
``/proc/net/dev`` inside the namespaces), that the parsed results make sense, and that the
servers/daemons are gone and their files removed after ``cleanup`` and teardown.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from vnetbench.backends.lab import Lab, open_lab
from vnetbench.lab.spec import LabSpec
from vnetbench.results.model import Sample
from vnetbench.scenario.sweep import load_scenario
from vnetbench.workloads.mpi.bench import find_mpi_bench
from vnetbench.workloads.mpi.workload import MpiOptions, MpiWorkload
from vnetbench.workloads.oltp import OltpOptions, OltpWorkload

from .labtools import dev_bytes

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["host", "bridge", "vxlan"]

needs_mariadb = pytest.mark.skipif(
    not (shutil.which("mariadbd") and shutil.which("sysbench")),
    reason="mariadb-server / sysbench not installed (scripts/setup.d/20-apps.sh)")
needs_mpi = pytest.mark.skipif(
    not (shutil.which("mpirun") and shutil.which("mpicc")),
    reason="openmpi-bin / libopenmpi-dev not installed (scripts/setup.d/20-apps.sh)")


def pids_of(program: str, marker: str) -> list[int]:
    """PIDs running ``program`` whose command line or environment mentions ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (entry / "environ").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if program in cmdline and (marker in cmdline or marker in environ):
            found.append(int(entry.name))
    return found


def by_metric(samples: list[Sample], **labels: str) -> dict[str, float]:
    return {s.metric: s.value for s in samples
            if all(s.labels.get(k) == v for k, v in labels.items())}


def test_shipped_app_scenarios_load() -> None:
    oltp = load_scenario(ROOT / "scenarios" / "oltp.yaml")
    assert oltp.points[0].scenario.workload_options()[0][0] == "oltp"
    assert {"host", "bridge", "nat", "vxlan"} <= set(oltp.points[0].scenario.layers)
    mpi = load_scenario(ROOT / "scenarios" / "mpi.yaml")
    assert all(p.scenario.nodes == 8 for p in mpi.points)
    tests = {o.test for p in mpi.points for _, o in p.scenario.workload_options()
             if isinstance(o, MpiOptions)}
    assert tests == {"pingpong", "barrier"}


@pytest.mark.root
@pytest.mark.heavy
@needs_mariadb
@pytest.mark.parametrize("layer", [*LAYERS, "nat", "docker-nat"])
def test_oltp_across_hosts(layer: str, tmp_path: Path) -> None:
    options = OltpOptions(tables=1, table_size=1000, threads=2, duration=2.0)
    with open_lab(LabSpec(layer=layer, hosts=2, nodes=2, services=[options.port])) as lab:
        server, client = lab.nodes
        assert server.host != client.host
        work_dir = lab.work_dir
        workload = OltpWorkload(options)
        before = {n.name: dev_bytes(n) for n in lab.nodes}
        workload.prepare(lab)
        try:
            samples = workload.run(lab, tmp_path / "raw")
        finally:
            marker = str(work_dir)
            assert pids_of("mariadbd", marker), "the server should run until cleanup"
            workload.cleanup(lab)
        assert not pids_of("mariadbd", marker), "mariadbd still running after cleanup"
        assert not list(work_dir.glob("mariadb-*")), "server files left after cleanup"
        moved = {n.name: dev_bytes(n) - before[n.name] for n in lab.nodes}
        # 2 s of point selects: well over 100 kB each way through both lab interfaces
        assert all(v > 100_000 for v in moved.values()), moved
    assert not work_dir.exists()
    m = by_metric(samples, client="n1")
    assert m["tps"] > 100 and m["qps"] >= m["tps"]
    assert m["errors"] == 0 and m["reconnects"] == 0
    assert 0 < m["latency_p50_ms"] < m["latency_p99_ms"]
    assert m["latency_mean_ms"] > 0 and m["latency_p95_ms"] > 0
    assert (tmp_path / "raw" / "sysbench-n1.txt").is_file()


@pytest.mark.root
@pytest.mark.heavy
@needs_mariadb
def test_oltp_two_clients_and_bad_start(tmp_path: Path) -> None:
    with open_lab(LabSpec(layer="bridge", hosts=2, nodes=3)) as lab:
        workload = OltpWorkload(OltpOptions(table_size=500, threads=2, duration=1.0,
                                            clients=2))
        workload.prepare(lab)
        try:
            samples = workload.run(lab, tmp_path)
        finally:
            workload.cleanup(lab)
        total = by_metric(samples, client="all")["tps"]
        parts = [by_metric(samples, client=c)["tps"] for c in ("n1", "n2")]
        assert total == pytest.approx(sum(parts)) and min(parts) > 0
        too_many = OltpWorkload(OltpOptions(clients=3))
        with pytest.raises(Exception, match="needs 4 nodes"):
            too_many.prepare(lab)


def run_mpi(lab: Lab, options: MpiOptions, raw: Path) -> tuple[list[Sample], dict[str, int]]:
    """Run one MPI test; returns samples and bytes moved per node interface."""
    workload = MpiWorkload(options)
    before = {n.name: dev_bytes(n) for n in lab.nodes}
    workload.prepare(lab)
    private = next(lab.work_dir.glob("mpi-*"))
    try:
        samples = workload.run(lab, raw)
    finally:
        workload.cleanup(lab)
    assert not private.exists(), "MPI files left after cleanup"
    for program in ("orted", "vnb-mpi-bench", "mpi.agent"):
        assert not pids_of(program, str(private)), f"{program} still running after cleanup"
    moved = {n.name: dev_bytes(n) - before[n.name] for n in lab.nodes}
    return samples, moved


@pytest.mark.root
@pytest.mark.heavy
@needs_mpi
@pytest.mark.parametrize("layer", [*LAYERS, "docker-overlay"])
def test_mpi_across_hosts(layer: str, tmp_path: Path) -> None:
    with open_lab(LabSpec(layer=layer, hosts=2, nodes=4)) as lab:
        work_dir = lab.work_dir
        assert lab.nodes[0].host != lab.nodes[1].host
        samples, moved = run_mpi(lab, MpiOptions(test="pingpong", iterations=2000), tmp_path)
        rtt = by_metric(samples)
        assert rtt["rtt_iterations"] == 2000
        assert 0 < rtt["rtt_min_us"] <= rtt["rtt_p50_us"] < rtt["rtt_p99_us"] <= rtt["rtt_max_us"]
        # 2000 round trips of rank 0 <-> 1 cross both of their lab interfaces
        assert moved["n0"] > 2000 * 60 and moved["n1"] > 2000 * 60, moved

        samples, moved = run_mpi(lab, MpiOptions(test="barrier", duration=2.0), tmp_path)
        sync = by_metric(samples, test="barrier", ranks="4")
        assert sync["sync_iterations"] >= 50
        assert 0 < sync["sync_p50_us"] < sync["sync_p99_us"]
        if layer != "host":  # with host, ranks of one host talk over loopback as well
            assert all(v > 10_000 for v in moved.values()), moved
        else:
            assert moved["n0"] > 10_000 and moved["n1"] > 10_000, moved
    assert not work_dir.exists()
    assert (tmp_path / "mpi-barrier-n4-s8.json").is_file()


@pytest.mark.root
@pytest.mark.heavy
@needs_mpi
def test_mpi_allreduce_eight_ranks_one_host(tmp_path: Path) -> None:
    with open_lab(LabSpec(layer="bridge", hosts=1, nodes=8)) as lab:
        samples, moved = run_mpi(lab, MpiOptions(test="allreduce", size=4096, iterations=200),
                                 tmp_path)
    m = by_metric(samples, ranks="8", size="4096")
    assert m["allreduce_iterations"] == 200
    assert 0 < m["allreduce_p50_us"] <= m["allreduce_p99_us"]
    assert all(v > 200 * 1000 for v in moved.values()), moved


@pytest.mark.root
@pytest.mark.heavy
@needs_mpi
def test_mpi_eight_daemons_start_together(tmp_path: Path) -> None:
    """8 orteds launched at once share a hostname and filesystem (regression: without a
    TMPDIR per node they raced on session dirs and hwloc/PMIx files, hanging 1 run in 4)."""
    with open_lab(LabSpec(layer="macvlan", hosts=1, nodes=8)) as lab:
        for attempt in range(3):
            samples, _ = run_mpi(lab, MpiOptions(test="barrier", iterations=100, timeout=60.0),
                                 tmp_path / str(attempt))
            assert by_metric(samples)["sync_iterations"] == 100
            stderr = "".join(p.read_text() for p in (tmp_path / str(attempt)).glob("*.stderr"))
            # the session-directory race logged ORTE errors; OpenMPI's help-message
            # aggregation (show_help.c) logs one now and then in any job, harmlessly
            assert [line for line in stderr.splitlines()
                    if "ORTE_ERROR_LOG" in line and "show_help" not in line] == []


@needs_mpi
def test_mpi_bench_builds_from_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the set-up's binary the workload compiles the C source with mpicc."""
    monkeypatch.delenv("VNETBENCH_MPI_BENCH", raising=False)
    monkeypatch.setattr("vnetbench.workloads.mpi.bench.PACKAGE_BIN", tmp_path / "none")
    built = find_mpi_bench(tmp_path / "build")
    assert built == tmp_path / "build" / "vnb-mpi-bench"
    assert os.access(built, os.X_OK)
