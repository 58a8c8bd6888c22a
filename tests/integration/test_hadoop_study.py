"""Study 002's Hadoop pack, reduced: the pack's own scenario with every benchmark once at small
sizes, run end to end by ``vnetbench run`` and judged by ``vnetbench reproduce --judge``.

Checks each benchmark's samples and job counters (WordCount, TeraGen/TeraSort/TeraValidate,
TestDFSIO write and read, NNBench, MRBench, Pi), that the pack's configuration reached the
cluster (replication 3, 64 MiB blocks), that the verdict table lists every finding of the
study, and that nothing of the run is left. Needs root and the jar cache (scripts/setup.sh).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vnetbench.errors import MissingToolError
from vnetbench.results.store import load_run
from vnetbench.studies.model import find_study
from vnetbench.studies.reproduce import judge_runs
from vnetbench.workloads.hadoop.install import hadoop_home

from .labtools import benchmark_value as of

pytestmark = [pytest.mark.root, pytest.mark.heavy]

BENCHMARKS = ("wordcount", "teragen", "terasort", "teravalidate", "dfsio-write", "dfsio-read",
              "nnbench", "mrbench", "pi")


def reduced_pack(out: Path) -> Path:
    """The pack's hadoop-quick.yaml with 3 workers on one host, bridge only, small sizes."""
    study = find_study("002")
    source = study.folder / "hadoop-quick.yaml"  # measured by the standard size, beside native
    data = yaml.safe_load(source.read_text())
    data.update(name="s002-reduced", hosts=1, nodes=3, layers=["bridge"], repeat=1)
    data.pop("link", None)
    hadoop = data["workloads"][0]["hadoop"]
    assert hadoop["replication"] == 3 and hadoop["block_size"] == "64M"  # the study's
    hadoop.update(data="8MB", wordcount={"size": "4MB"}, dfsio={"files": 3, "file_size": "2MB"},
                  nnbench={"files": 20, "maps": 2, "reduces": 1}, mrbench={"runs": 2},
                  pi={"maps": 2, "samples": 1000})
    path = out / "s002-reduced.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_reduced_study_002_pack_runs_every_benchmark(tmp_path: Path) -> None:
    try:
        hadoop_home()
    except MissingToolError as exc:
        pytest.skip(str(exc))
    scenario = reduced_pack(tmp_path)
    run_dir = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "vnetbench", "run", str(scenario), "--out",
                           str(run_dir)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    for bench in BENCHMARKS:  # progress as each benchmark finishes
        assert f"hadoop: {bench} " in done.stderr, bench
    samples = load_run(run_dir).samples

    for bench in BENCHMARKS:
        assert of(samples, "elapsed_s", bench) > 0, bench
        assert of(samples, "jobs_count", bench) >= 1, bench
        assert of(samples, "task_cpu_time_ms", bench) > 0, bench  # counters summed per job
    assert of(samples, "jobs_count", "mrbench") == 2
    assert of(samples, "hdfs_written_bytes", "teragen") == 8_000_000
    assert of(samples, "shuffle_bytes", "terasort") > 8_000_000
    assert of(samples, "spilled_records_count", "terasort") >= 80_000  # 100-byte rows
    assert of(samples, "hdfs_read_bytes", "wordcount") >= 4_000_000
    assert of(samples, "shuffle_bytes", "wordcount") > 0
    assert of(samples, "teravalidate_valid", "teravalidate") == 1.0
    for mode in ("dfsio-write", "dfsio-read"):
        assert of(samples, "dfsio_throughput_mib_per_s", mode) > 0
        assert of(samples, "dfsio_files_count", mode) == 3
    assert of(samples, "nnbench_create_write_tps", "nnbench") > 0
    assert of(samples, "mrbench_avg_job_ms", "mrbench") > 0
    assert 2.5 < of(samples, "pi_estimate", "pi") < 3.8
    block = [s.value for s in samples if s.metric == "hadoop_block_size_bytes"]
    replication = [s.value for s in samples if s.metric == "hadoop_replication_count"]
    assert block == [64 * 1024 * 1024] and replication == [3.0]

    # a reduced pack is not the study's: --judge refuses it in one line and writes nothing
    judged = subprocess.run([sys.executable, "-m", "vnetbench", "reproduce", "002", "--judge",
                             str(run_dir)], capture_output=True, text=True, timeout=300)
    assert judged.returncode == 2 and "not of study 002" in judged.stderr, judged.stderr[-2000:]
    assert len(judged.stderr.strip().splitlines()) == 1
    assert not (run_dir / "reproduction.json").exists()
    # its verdicts, judged in-process as --judge would on the pack's own run
    study = find_study("002")
    table = judge_runs(study, [run_dir])
    assert [j.finding.id for j in table] == [f.id for f in study.findings]
    hadoop_rows = [j for j in table if j.finding.check.metric in
                   ("elapsed_s", "dfsio_throughput_mib_per_s")]
    assert hadoop_rows and all(j.verdict == "not comparable" for j in hadoop_rows)
    # the reason, not a blank: the run (bridge only) booted no guest to find out about KVM
    assert all("whether KVM works here" in j.why for j in hadoop_rows), [j.why for j in hadoop_rows]
