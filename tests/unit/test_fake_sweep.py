"""A whole sweep through the fake backend: scenario -> runner -> results -> report -> compare,
as the CLI runs them, without root and without building anything in the kernel (the plans
are computed and handed to the backend, which records them). The probe is real and its
packets flow on loopback."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.fakes.fake_backend import fake_backend
from vnetbench.cli.main import main
from vnetbench.errors import MissingToolError
from vnetbench.host.binaries import find_binary

SCENARIO = """\
name: fake-sweep
hosts: [1, 2]
nodes: 2
layers: [host, bridge]
workloads:
  - rr: {duration: 200ms}
  - stream: {duration: 300ms, interval: 100ms}
repeat: 2
noise_floor: false
platform: {placement: off, idle_states: false, governor: false, quiet: null}
seed: 3
"""


def _probe_installed() -> bool:
    try:
        find_binary("vnetbench-probe")
    except MissingToolError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _probe_installed(),
                                reason="vnetbench-probe not built (scripts/setup.sh)")


def _run(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    scenario = tmp_path / "fake.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / name
    code = main(["run", str(scenario), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    return out, captured.out


def test_a_sweep_runs_reports_and_compares_through_the_fake_backend(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # nothing on this path may need root
    with fake_backend(monkeypatch, tmp_path / "state") as log:
        run_a, printed = _run(tmp_path, "a", capsys)
        first, stopped = list(log.realised), list(log.stopped)
        run_b, _ = _run(tmp_path, "b", capsys)

    # every trial was planned with the real layer plan and handed to the backend
    layers = {layer for layer, _, _ in first}
    assert layers == {"host", "bridge"}
    assert log.checked[:2] == ["host", "bridge"]  # every layer checked before any trial
    assert len(first) == 2 * 2 * 2  # 2 layers x 2 host counts x 2 repetitions
    bridge_plans = [text for layer, _, text in first if layer == "bridge"]
    assert all("type bridge" in text for text in bridge_plans)
    assert any("vnb" in text and "h1" in text for text in bridge_plans)  # 2 emulated hosts
    assert stopped.count("bridge") == len(bridge_plans)  # torn down after every trial
    assert any("serve" in argv for _, argv in log.commands)

    # the run's results hold real measurements of both layers
    samples = [json.loads(line) for line in (run_a / "samples.jsonl").read_text().splitlines()]
    rr = [s for s in samples if s["metric"] == "tps"]
    assert {s["labels"]["layer"] for s in rr} == {"host", "bridge"}
    assert all(s["value"] > 0 for s in rr)
    run = json.loads((run_a / "run.json").read_text())
    assert run["status"] == "complete"
    legend = run["environment"]["legend"]  # what its labels and layers meant, for readers
    assert legend["label_kinds"]["link.delay"] == "duration" and legend["twins"] == {}
    assert legend["between_hosts"] == {}  # host and bridge: no tunnel between hosts
    lab_json = next((run_a / "raw").glob("trial-*/lab.json"))
    assert json.loads(lab_json.read_text())["fake"] == {"applied": False}

    # the CLI printed the summary and wrote the report
    assert "results:" in printed and "report:" in printed
    assert (run_a / "report.html").exists()
    assert "bridge" in (run_a / "report.html").read_text()

    # compare judges the two runs (a gate: exit code 0 or 1, never a crash or bad input)
    code = main(["compare", str(run_a), str(run_b), "--allow", "unjudged"])
    judged = capsys.readouterr().out
    assert code in (0, 1) and "groups" in judged, judged

    # nothing was built in the kernel, and nothing is left of the runs
    run_ids = {m.group(1) for _, _, text in log.realised
               for m in re.finditer(r"netns add vnb([0-9a-f]{4})-", text)}
    assert len(run_ids) == len(log.realised)  # a run id per trial, as real labs get
    present = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []
    assert [n for n in present if n[3:7] in run_ids] == []
    assert not list((tmp_path / "state").glob("*.json")), "a run's state file was left"


def test_a_full_disk_ends_the_run_in_one_line_and_keeps_the_trials_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The disk fills after the first trial's samples are written: one line that says what
    to do (no traceback), exit 2, the labs torn down, run.json marked incomplete and the
    samples written before kept."""
    import errno

    from vnetbench.results.model import Sample
    from vnetbench.results.store import RunWriter

    real = RunWriter.append_samples
    calls: list[int] = []

    def fill(self: RunWriter, samples: list[Sample]) -> int:
        calls.append(len(samples))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device",
                          str(self.run_dir / "samples.jsonl"))
        return real(self, samples)

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(RunWriter, "append_samples", fill)
    scenario = tmp_path / "fake.yaml"
    scenario.write_text(SCENARIO.replace("hosts: [1, 2]", "hosts: 1"))
    out = tmp_path / "full"
    with fake_backend(monkeypatch, tmp_path / "state") as log:
        code = main(["run", str(scenario), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    line = next(x for x in err.splitlines() if x.startswith("vnetbench: error:"))
    assert "No space left on device" in line and "free some space" in line, err
    assert sorted(log.stopped) == sorted(layer for layer, _, _ in log.realised)
    assert json.loads((out / "run.json").read_text())["status"] == "incomplete"
    assert (out / "samples.jsonl").read_text().count("\n") == calls[0]
