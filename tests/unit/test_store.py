"""Unit tests of the run directory store (RunWriter, load_run)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vnetbench.errors import VnetbenchError
from vnetbench.results.model import Sample
from vnetbench.results.store import (
    FORMAT_VERSION,
    RunStatus,
    RunWriter,
    load_run,
    scenario_hash,
)
from vnetbench.results.warnings import EvidenceWarning, WarningKind

EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "evidence"
SCENARIO = {"name": "t", "layers": ["host", "vxlan"], "duration": "5s"}


def _samples(trial: int) -> list[Sample]:
    labels = {"layer": "host", "nodes": "2", "trial": str(trial)}
    return [Sample("tps", 1000.0 + trial, "1/s", labels, 10 + trial),
            Sample("rtt_p50_us", 40.5, "us", labels, 10 + trial)]


def test_write_and_load_roundtrip(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    writer = RunWriter.create(run_dir, SCENARIO, {"kernel": "6.1"}, run_id="r1")
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "running" and meta["format_version"] == FORMAT_VERSION
    assert meta["scenario_sha256"] == scenario_hash(SCENARIO)
    assert (run_dir / "raw").is_dir()
    assert writer.append_samples(_samples(0)) == 2
    # durable after every append: another reader sees both lines now
    assert len((run_dir / "samples.jsonl").read_text().splitlines()) == 2
    writer.append_samples(_samples(1))
    raw = writer.write_raw("trial 1/netperf.out", "RESULT 42\n")
    assert raw.parent == run_dir / "raw" and raw.name == "trial_1_netperf.out"
    writer.add_warning(EvidenceWarning(WarningKind.NOISY_TRIAL, "cv 9%", "pin cpus"))
    writer.add_warning(EvidenceWarning.from_dict("plain text"))
    writer.close()
    run = load_run(run_dir)
    assert run.run_id == "r1" and run.status is RunStatus.COMPLETE and not run.truncated
    assert run.samples == _samples(0) + _samples(1)
    assert run.meta.environment == {"kernel": "6.1"}
    assert run.meta.finished is not None
    assert [w.kind for w in run.warnings] == [WarningKind.NOISY_TRIAL, WarningKind.OTHER]


def test_scenario_hash_is_canonical() -> None:
    assert scenario_hash({"a": 1, "b": [1, 2]}) == scenario_hash({"b": [1, 2], "a": 1})
    assert scenario_hash({"a": 1}) != scenario_hash({"a": 2})
    assert len(scenario_hash({})) == 64


def test_create_refuses_existing_run(tmp_path: Path) -> None:
    RunWriter.create(tmp_path, SCENARIO).close()
    with pytest.raises(VnetbenchError, match="already holds a run"):
        RunWriter.create(tmp_path, SCENARIO)


def test_context_manager_marks_failure(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), RunWriter.create(tmp_path / "r", SCENARIO) as writer:
        writer.set_stage("build-lab")
        writer.append_samples(_samples(0))
        raise RuntimeError("boom")
    run = load_run(tmp_path / "r")
    assert run.status is RunStatus.FAILED and run.meta.failing_stage == "build-lab"
    assert len(run.samples) == 2
    with RunWriter.create(tmp_path / "ok", SCENARIO) as writer:
        writer.update_status(RunStatus.RUNNING)
    assert load_run(tmp_path / "ok").status is RunStatus.COMPLETE
    with pytest.raises(VnetbenchError, match="closed"):
        writer.append_samples(_samples(2))


def test_recorded_truncated_run_is_incomplete() -> None:
    run = load_run(EVIDENCE / "run_truncated")
    assert run.truncated
    assert run.meta.status is RunStatus.RUNNING
    assert run.status is RunStatus.INCOMPLETE
    assert len(run.samples) == 63  # the cut 64th line is dropped


def test_killed_complete_run_with_cut_line(tmp_path: Path) -> None:
    shutil.copytree(EVIDENCE / "run_layers", tmp_path / "r")
    with open(tmp_path / "r" / "samples.jsonl", "a") as fh:
        fh.write('{"metric": "tps", "val')
    run = load_run(tmp_path / "r")
    assert run.truncated and run.status is RunStatus.INCOMPLETE and len(run.samples) == 770


def test_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    writer = RunWriter.create(tmp_path, SCENARIO)
    writer.append_samples(_samples(0))
    writer.close()
    path = tmp_path / "samples.jsonl"
    lines = path.read_text().splitlines()
    path.write_text(lines[0][:10] + "\n" + lines[1] + "\n")
    with pytest.raises(VnetbenchError, match=r"samples.jsonl:1: corrupt"):
        load_run(tmp_path)


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(VnetbenchError, match="not a vnetbench run directory"):
        load_run(tmp_path)
    (tmp_path / "run.json").write_text("{")
    with pytest.raises(VnetbenchError, match="not valid JSON"):
        load_run(tmp_path)
    (tmp_path / "run.json").write_text(json.dumps({"format_version": 99}))
    with pytest.raises(VnetbenchError, match="upgrade vnetbench"):
        load_run(tmp_path)


def test_failed_close_keeps_explicit_stage(tmp_path: Path) -> None:
    writer = RunWriter.create(tmp_path, SCENARIO)
    writer.close(RunStatus.FAILED, failing_stage="workload")
    run = load_run(tmp_path)
    assert run.status is RunStatus.FAILED and run.meta.failing_stage == "workload"


def test_an_unchanged_environment_fact_does_not_rewrite_run_json(tmp_path: Path) -> None:
    writer = RunWriter.create(tmp_path / "run", {"name": "x"}, {"kernel": "6"})
    run_json = tmp_path / "run" / "run.json"
    writer.set_environment("controls", {"idle": False})
    first = run_json.stat().st_mtime_ns, run_json.stat().st_ino
    writer.set_environment("controls", {"idle": False})
    assert (run_json.stat().st_mtime_ns, run_json.stat().st_ino) == first  # not rewritten
    writer.set_environment("controls", {"idle": True})
    assert json.loads(run_json.read_text())["environment"]["controls"] == {"idle": True}
    writer.close(RunStatus.COMPLETE)
