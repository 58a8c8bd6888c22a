"""Signals never lost, never a traceback: Ctrl-C and SIGTERM during a lab's teardown stop
the run right after that teardown; SIGTERM at build, during a trial and between trials ends
`vnetbench run` with one line, exit 143, a loadable run marked incomplete, nothing left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from vnetbench.backends.lab import Lab, open_lab
from vnetbench.lab.spec import LabSpec
from vnetbench.results.store import load_run
from vnetbench.run.runner import run_scenario
from vnetbench.scenario.sweep import expand
from vnetbench.signals import EXIT_SIGTERM, Terminated

from ..conftest import lab_leftovers, new_leftovers, settled, signals_at_default

pytestmark = [pytest.mark.root, pytest.mark.usefixtures("python_signal_handlers")]

SCENARIO = {"name": "signals", "hosts": 1, "nodes": 2, "layers": ["host", "bridge"],
            "repeat": 3, "noise_floor": False, "pairing": "off",
            "workloads": [{"rr": {"duration": "1.5s"}}]}
"""Unpaired: a lab per trial (signals in an interleaved session: ``test_paired_run``)."""


def _ours(run_ids: set[str]) -> list[str]:
    return [x for x in lab_leftovers() if any(f"vnb{r}" in x for r in run_ids)]


def _signal_in_teardown(monkeypatch: pytest.MonkeyPatch, sig: signal.Signals, twice: bool,
                        seen: set[str]) -> None:
    """Make the next lab teardowns receive ``sig`` (once or twice) as they start."""
    original = Lab.teardown

    def teardown(self: Lab) -> list[str]:
        seen.add(self.run_id)
        os.kill(os.getpid(), sig)
        if twice:
            os.kill(os.getpid(), sig)
        time.sleep(0.05)  # the signals are delivered while teardown is under way
        return original(self)

    monkeypatch.setattr(Lab, "teardown", teardown)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("twice", [False, True])
def test_signal_during_teardown_acts_after_it(monkeypatch: pytest.MonkeyPatch,
                                              sig: signal.Signals, twice: bool) -> None:
    seen: set[str] = set()
    _signal_in_teardown(monkeypatch, sig, twice, seen)
    expected = KeyboardInterrupt if sig == signal.SIGINT else Terminated
    with pytest.raises(expected), open_lab(LabSpec("bridge", hosts=1, nodes=2)) as lab:
        run_id = lab.run_id
    assert seen == {run_id}
    assert _ours(seen) == [], "teardown must finish before the signal is acted on"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_run_stops_after_the_teardown_a_signal_landed_in(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sig: signal.Signals) -> None:
    seen: set[str] = set()
    _signal_in_teardown(monkeypatch, sig, twice=False, seen=seen)
    expected = KeyboardInterrupt if sig == signal.SIGINT else Terminated
    with pytest.raises(expected):
        run_scenario(expand(dict(SCENARIO)), tmp_path / "run", progress=lambda _m: None)
    run = load_run(tmp_path / "run")
    assert run.status.value == "incomplete"
    trials = {s.labels["trial"] for s in run.samples}
    assert trials == {"0"}, "the run must stop right after the first trial's teardown"
    assert len(seen) == 1 and _ours(seen) == []


def _start_run(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "vnetbench", "run", str(scenario), "--out",
                             str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=signals_at_default)
    return proc, out


def _wait_for(proc: subprocess.Popen[str], marker: str, timeout: float = 60.0) -> list[str]:
    """stderr lines up to and including the first that contains ``marker``."""
    assert proc.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if marker in line:
            return lines
    raise AssertionError(f"never saw {marker!r}: {lines}")


@pytest.mark.parametrize("when", ["build", "trial", "between trials"])
def test_sigterm_ends_the_run_cleanly(tmp_path: Path, when: str) -> None:
    proc, out = _start_run(tmp_path)
    if when == "build":
        _wait_for(proc, "platform:")  # the first lab is being built right now
    elif when == "trial":
        _wait_for(proc, "[1/")
        time.sleep(0.9)  # into the second trial's 1.5 s request/response
    else:
        _wait_for(proc, "[1/")  # printed as a trial ends, before the next starts
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_SIGTERM, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("vnetbench: terminated (SIGTERM)")
    run = load_run(out)
    assert run.status.value == "incomplete"
    assert settled(set(new_leftovers())) == set()  # other runs on the machine aside
