"""A small real sweep end to end (lab, probe, collectors, store, index, report), and a run
interrupted with SIGINT that keeps a valid, loadable partial result marked incomplete."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vnetbench.results.index import build_index
from vnetbench.results.store import RunStatus, load_run

from ..conftest import new_leftovers, settled, signals_at_default

pytestmark = pytest.mark.root

SWEEP = """
name: pipeline
hosts: 1
nodes: [2, 3]
layers: [host, bridge]
workloads:
  - rr: {protocol: tcp, duration: 1s}
repeat: 2
seed: 3
"""


def test_small_sweep_produces_results_index_and_report(tmp_path: Path) -> None:
    scenario = tmp_path / "sweep.yaml"
    scenario.write_text(SWEEP)
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "vnetbench", "run", str(scenario), "--out",
                           str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # 2 points, each a session of 3 paths (host as A/A paths a and b, bridge) alternated in
    # 100 ms slices for as long as 2 repetitions of 1 s: 20 rounds
    assert proc.stderr.count("3 paths x 20 rounds of 100 ms in 10 ms pieces, interleaved") == 2, proc.stderr
    assert proc.stderr.count("measured") == 2
    assert f"report: {out / 'report.html'}" in proc.stdout
    run = load_run(out)
    assert run.status is RunStatus.COMPLETE
    assert run.meta.environment["kernel"] and run.meta.environment["git"]["commit"]
    assert set(run.meta.environment["layers"]) == {"host", "bridge"}
    p50 = [s for s in run.samples if s.metric == "rtt_p50_us"]
    assert len(p50) == 2 * 3 * 20 and all(0 < s.value < 1e6 for s in p50)  # a slice: 1 tx or more
    assert {s.labels["design"] for s in p50} == {"interleaved"}
    assert {s.labels["nodes"] for s in p50} == {"2", "3"}
    # per-device counters of lab interfaces were collected
    assert any(s.metric.startswith("rx_packets") and s.labels.get("device", "").startswith("vnb")
               for s in run.samples)
    index = build_index([out])
    medians = index.medians("rtt_p50_us")
    assert medians, "index answers median queries"
    html = (out / "report.html").read_text()
    assert "<svg" in html and "bridge" in html  # figures inline, interactive
    assert list((out / "figures").glob("*.svg"))
    assert settled(set(new_leftovers())) == set()  # other runs on the machine aside


INTERRUPTED = """
name: interrupted
hosts: 1
nodes: 2
layers: [host, bridge, routed]
workloads:
  - rr: {protocol: tcp, duration: 300ms}
  - crr: {duration: 5s}
repeat: 5
"""  # paired: the rr session's samples are written when it ends, the SIGINT lands in crr's


def test_sigint_keeps_a_loadable_partial_run(tmp_path: Path) -> None:
    scenario = tmp_path / "long.yaml"
    scenario.write_text(INTERRUPTED)
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "vnetbench", "run", str(scenario), "--out",
                             str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=signals_at_default)
    samples = out / "samples.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if samples.exists() and '"rtt_p50_us"' in samples.read_text():
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert "kept" in err
    run = load_run(out)
    assert run.status is RunStatus.INCOMPLETE
    trials = {s.labels["trial"] for s in run.samples if s.metric == "rtt_p50_us"}
    assert 1 <= len(trials) < 15
    assert json.loads((out / "run.json").read_text())["status"] == "incomplete"
    assert settled(set(new_leftovers())) == set()  # other runs on the machine aside
