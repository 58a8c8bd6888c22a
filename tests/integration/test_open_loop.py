"""The probe's open loop against its real server on loopback: a 50 ms server stall shows in
the open loop's p99 (every request scheduled during the stall waits for it, counted from its
arrival time) and not in a closed loop's (one transaction waits; the loop sends nothing
meanwhile: coordinated omission). The server is stopped and continued by its PID, the one
this test started; traffic stays on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vnetbench.host.binaries import find_binary
from vnetbench.workloads.probe.parse import parse_output, to_samples

PROBE = find_binary("vnetbench-probe")


@pytest.fixture()
def server() -> Iterator[tuple[subprocess.Popen[str], int]]:
    proc = subprocess.Popen([str(PROBE), "serve", "--bind", "127.0.0.1", "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        listening = json.loads(proc.stdout.readline())
        yield proc, int(listening["port"])
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def _stalled(server: tuple[subprocess.Popen[str], int], *args: str) -> dict[str, Any]:
    """Run ``rr`` for 2 s with ``args``, stopping the server for 50 ms after 1 s."""
    proc, port = server
    client = subprocess.Popen([str(PROBE), "rr", "--server", f"127.0.0.1:{port}",
                               "--duration", "2", *args], stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGSTOP)
    time.sleep(0.05)
    os.kill(proc.pid, signal.SIGCONT)
    out, _ = client.communicate(timeout=30)
    assert client.returncode == 0, out[-2000:]
    end: dict[str, Any] = json.loads(out.splitlines()[-1])
    return end


@pytest.mark.parametrize("wait", ["block", "spin"])
def test_a_server_stall_shows_in_the_open_loops_p99_and_not_in_the_closed_loops(
        server: tuple[subprocess.Popen[str], int], wait: str) -> None:
    opened = _stalled(server, "--rate", "2000", "--flows", "2", "--wait", wait)
    assert opened["wait"] == wait
    closed = _stalled(server)
    # open loop: ~100 of ~4000 requests arrive during the stall and wait up to 50 ms
    assert opened["rtt_us"]["p99"] > 10_000, opened["rtt_us"]
    assert opened["rtt_us"]["max"] > 40_000
    assert opened["unanswered"] == 0 and opened["behind"] is False
    # closed loop: one transaction waits 50 ms, the rest go on at loopback speed
    assert closed["rtt_us"]["max"] > 40_000
    assert closed["rtt_us"]["p99"] < 5_000, closed["rtt_us"]


@pytest.mark.parametrize("wait", ["block", "spin"])
def test_an_open_loop_above_capacity_says_it_fell_behind(
        server: tuple[subprocess.Popen[str], int], wait: str) -> None:
    _, port = server
    out = subprocess.run([str(PROBE), "rr", "--server", f"127.0.0.1:{port}", "--duration", "1",
                          "--rate", "1000000", "--arrivals", "constant", "--wait", wait],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    result = parse_output(out, "rr")
    samples = {s.metric: s.value for s in to_samples(result, {"layer": "host"})}
    assert samples["offered_tps"] == 1e6
    assert samples["behind"] == 1.0  # a loopback pair of processes does not answer 1M/s
    assert samples["achieved_share"] < 0.95
    assert samples["tps"] < 1e6
    # from the arrival time the queue shows; from the write it hides behind the late sends
    assert samples["rtt_p50_us"] > samples["service_p50_us"]


def test_shares_of_the_baselines_capacity_found_first_in_a_run(tmp_path: Path) -> None:
    """A run offering shares of host's capacity: the capacity found once on host's path
    (recorded), every layer then offered the same rate at each share, nothing left."""
    from vnetbench.results.store import load_run
    from vnetbench.run.runner import run_scenario
    from vnetbench.scenario.sweep import expand

    raw = {"name": "shares", "hosts": 1, "nodes": 2, "layers": ["host", "bridge"],
           "workloads": [{"rr": {"share": [0.25, 0.5], "flows": 2, "duration": "500ms"}}],
           "repeat": 1, "platform": {"quiet": None}}
    said: list[str] = []
    outcome = run_scenario(expand(raw, str(tmp_path / "shares.yaml")), tmp_path / "run",
                           progress=said.append)
    assert outcome.trials_failed == 0
    samples = load_run(tmp_path / "run").samples
    capacity = sorted(s.value for s in samples if s.metric == "capacity_tps")
    assert len(capacity) == 3 and capacity[0] > 1000, capacity
    assert sum("the baseline's capacity" in m for m in said) == 1
    offered: dict[str, set[str]] = {}
    for s in samples:
        if s.metric == "tps" and s.labels.get("loop") == "open":
            offered.setdefault(s.labels["rr.share"], set()).add(
                f"{s.labels['layer']}@{s.labels['offered']}")
    median = capacity[1]
    for share, seen in offered.items():
        rate = f"{max(1, round(float(share) * median)):g}/s"
        assert seen == {f"host@{rate}", f"bridge@{rate}"}, (share, seen)
    assert len(offered) == 2
    from vnetbench.report.html import render_report
    from vnetbench.report.load import knee_why
    from vnetbench.results.load import load_curves

    run = load_run(tmp_path / "run")
    bridge = next(c for c in load_curves(run.samples) if c.layer == "bridge")
    why = knee_why(bridge, run.samples, run.meta.recorded, run.meta.environment)
    assert why.startswith(("at its knee (", "at the highest load (")) and "CPU " in why, why
    page = render_report(run)
    assert "shares of host's capacity" in page and "Along the swept rr.share" in page
