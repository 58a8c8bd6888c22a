"""Every command's exit status says whether it did what was asked: a table of cases (each
command, with a case where it has nothing to do or cannot do it), run as a user would
(``python3 -m vnetbench ...`` from an empty directory), each with the status it must give,
and the exit-code table of docs/cli.md checked against it: every status a case gives is the
one the table lists for that command, and every command is in the table."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from vnetbench.cli.main import build_parser
from vnetbench.host.features import kernel_features

from ..conftest import dead_leftovers

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "evidence" / "run_sweep"
RUN_B = ROOT / "tests" / "data" / "evidence" / "run_layers"

Setup = Callable[[Path], None]


def _nothing(_: Path) -> None:
    return None


def _write(name: str, text: str) -> Setup:
    def setup(tmp: Path) -> None:
        (tmp / name).write_text(text)
    return setup


def _both(first: Setup, second: Setup) -> Setup:
    def setup(tmp: Path) -> None:
        first(tmp)
        second(tmp)
    return setup


def _run_with_fifo_samples(tmp: Path) -> None:
    shutil.copytree(RUN, tmp / "run")
    (tmp / "run" / "samples.jsonl").unlink()
    os.mkfifo(tmp / "run" / "samples.jsonl")


def _fifo(name: str) -> Setup:
    def setup(tmp: Path) -> None:
        os.mkfifo(tmp / name)
    return setup


def _unsupported_layer() -> str | None:
    features = kernel_features()
    return next((layer for layer, feature in (("ipvlan", "ipvlan"), ("macvlan", "macvlan"))
                 if not features.get(feature, False)), None)


def _every_layer_skipped(tmp: Path) -> None:
    layer = _unsupported_layer()
    if layer is None:
        pytest.skip("this host supports every layer this case could skip")
    (tmp / "skip.yaml").write_text(f"name: skip\nlayers: [{layer}]\nskip_unsupported: true\n"
                                   "workloads: [rr]\n")


SSH_REFUSED = "Host *\n  Port 9\n  ConnectTimeout 5\n"
"""An ssh config under which every machine refuses the connection (the discard port of
this host, where nothing listens)."""

FAILING = """name: failing
layers: [host]
nodes: 2
noise_floor: false
workloads:
  - command: {client: ["false"], metrics: exit}
"""


@dataclass(frozen=True)
class Case:
    command: str
    argv: tuple[str, ...]
    status: int
    says: str = ""
    """Text the output (stdout or stderr) must hold."""
    setup: Setup = _nothing
    env: tuple[tuple[str, str], ...] = ()


CASES: dict[str, Case] = {
    "run: no such scenario": Case("run", ("run", "missing.yaml"), 2, "cannot read"),
    "run: --out a FIFO": Case("run", ("run", "ok.yaml", "--out", "fifo"), 2, "FIFO",
                              _both(_write("ok.yaml", "layers: [host]\n"), _fifo("fifo"))),
    "run: a trial failed": Case("run", ("run", "failing.yaml", "--out", "o"), 1,
                                "1 failed", _write("failing.yaml", FAILING)),
    "run: every layer skipped": Case("run", ("run", "skip.yaml", "--out", "o"), 1,
                                     "no trial ran", _every_layer_skipped),
    "plan: a plan": Case("plan", ("plan", "ok.yaml"), 0, "plan of scenario", _write("ok.yaml",
                                                                      "layers: [host]\n")),
    "plan: malformed": Case("plan", ("plan", "bad.yaml"), 2, "nodes",
                            _write("bad.yaml", "nodes: 0\n")),
    "plan: !!binary": Case("plan", ("plan", "bin.yaml"), 2, "!!binary",
                           _write("bin.yaml", "name: !!binary aGVsbG8=\n")),
    "plan: an ssh destination ssh refuses": Case(
        "plan", ("plan", "ssh.yaml"), 2, "starts with '-'",
        _write("ssh.yaml", "hosts: [{ssh: -oProxyCommand=touch x, underlay: eth1}]\n")),
    "clean: nothing left": Case("clean", ("clean",), 0),
    "labs: the kept labs": Case("labs", ("labs",), 0, "lab"),
    "clean --host: unreachable": Case("clean", ("clean", "--host", "root@127.0.0.1"), 1,
                                      "not cleaned", _write("ssh_config", SSH_REFUSED),
                                      (("VNETBENCH_SSH_CONFIG", "ssh_config"),)),
    "clean --host: a string ssh refuses": Case("clean", ("clean", "--host", "root@a;b"), 2,
                                               "ssh refuses"),
    "clean --host: an empty string": Case("clean", ("clean", "--host", ""), 2, "empty"),
    "clean --host: no such key": Case("clean", ("clean", "--host", "root@127.0.0.1",
                                                "--identity", "missing-key"), 2, "missing-key"),
    "list": Case("list", ("list",), 0, "layers:"),
    "schema": Case("schema", ("schema",), 0, "$schema"),
    "report: no such run": Case("report", ("report", "missing"), 2, "not a vnetbench run"),
    "report: samples a FIFO": Case("report", ("report", "run"), 2, "not a file",
                                   _run_with_fifo_samples),
    "compare: no such run": Case("compare", ("compare", "missing", str(RUN)), 2, "missing"),
    "compare: a filter matching nothing": Case(
        "compare", ("compare", str(RUN_B), str(RUN_B), "--metric", "no_such_*"), 2,
        "no_such_*"),
    "export: no such run": Case("export", ("export", "missing"), 2, "not a vnetbench run"),
    "export: --out a FIFO": Case("export", ("export", str(RUN), "--out", "fifo"), 2, "FIFO",
                                 _fifo("fifo")),
    "export: a file": Case("export", ("export", str(RUN), "--out", "s.csv"), 0, "wrote"),
    "history: no such store": Case("history", ("history", "check", "missing.db"), 2,
                                   "no such file"),
    "history: not a store": Case("history", ("history", "add", "junk.db", str(RUN)), 2,
                                 "not a vnetbench history store", _write("junk.db", "junk " * 300)),
    "history: a run added": Case("history", ("history", "add", "h.db", str(RUN)), 0, "added"),
    "reproduce: no study named": Case("reproduce", ("reproduce",), 2, "name one study"),
    "reproduce: unknown study": Case("reproduce", ("reproduce", "no-such-study"), 2,
                                     "no-such-study"),
    "up: --nodes 0": Case("up", ("up", "--nodes", "0"), 2, "at least 1"),
    "up: --hosts 0": Case("up", ("up", "--hosts", "0"), 2, "at least 1"),
    "up: --nodes -1": Case("up", ("up", "--nodes", "-1"), 2, "at least 1"),
    "up: more nodes than fit": Case("up", ("up", "--nodes", "99999"), 2, "address plan"),
    "up: unknown layer": Case("up", ("up", "--layer", "nope"), 2, "unknown layer"),
    "exec: no such lab": Case("exec", ("exec", "--lab", "zzzz", "n0", "--", "true"), 2,
                              "no kept lab"),
    "exec: no command": Case("exec", ("exec", "n0"), 2, "give the command"),
    "down: no such lab": Case("down", ("down", "--lab", "zzzz"), 2, "no kept lab"),
    "--version": Case("--version", ("--version",), 0, "vnetbench"),
}


def readme_table() -> dict[str, set[int]]:
    """command -> the statuses docs/cli.md's exit-code table lists for it (a column with
    text)."""
    text = (ROOT / "docs" / "cli.md").read_text()
    start = text.index("| command | 0 | 1 | 2 | other |")
    documented: dict[str, set[int]] = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        codes = {code for code, cell in zip((0, 1, 2), cells[1:4], strict=True) if cell}
        codes |= {int(n) for n in re.findall(r"\b(\d{3})\b", cells[4])}
        if "command's own status" in line:
            codes.add(-1)  # any status: the command's
        for name in re.findall(r"`([a-z-]+)`", cells[0]):
            documented[name] = codes
    return documented


@pytest.mark.parametrize("name", list(CASES))
def test_exit_status_says_what_happened(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    case.setup(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"),
           **{k: str(tmp_path / v) for k, v in case.env}}
    before = set(dead_leftovers())
    proc = subprocess.run([sys.executable, "-m", "vnetbench", *case.argv], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    output = proc.stdout + proc.stderr
    kept = re.search(r"lab ([0-9a-f]{4}) .* kept by process", proc.stdout)
    if kept:  # `up` built a lab it should have refused: tear it down before failing
        subprocess.run([sys.executable, "-m", "vnetbench", "down", "--lab", kept.group(1)],
                       env=env, capture_output=True, timeout=300, check=False)
    assert proc.returncode == case.status, (name, proc.returncode, output[-2000:])
    assert "Traceback" not in proc.stderr
    assert case.says in output, (name, output[-2000:])
    if case.status == 2:
        errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("vnetbench")]
        assert len(errors) == 1, proc.stderr  # one line (argparse's usage line aside)
    assert _new_leftovers(before) == set(), "the command left kernel objects"


def _new_leftovers(before: set[str], settle_s: float = 10.0) -> set[str]:
    """Objects of dead runs that were not there before and stay (other runs on this machine
    come and go meanwhile: one being torn down is not this command's leftover)."""
    deadline = time.monotonic() + settle_s
    while True:
        new = set(dead_leftovers()) - before
        if not new or time.monotonic() > deadline:
            return new
        time.sleep(0.5)


def test_readme_lists_every_status_the_cases_give() -> None:
    documented = readme_table()
    commands = next(set(a.choices) for a in build_parser()._actions
                    if isinstance(a, argparse._SubParsersAction))
    assert commands <= set(documented), f"not in docs/cli.md's table: {commands - set(documented)}"
    tested = {c.command for c in CASES.values()} - {"--version"}
    assert commands - {"schema"} <= tested | {"list", "doctor"}, commands - tested
    for name, case in CASES.items():
        if case.command == "--version":
            continue
        allowed = documented[case.command]
        assert case.status in allowed or -1 in allowed, (
            f"{name}: exits {case.status}, docs/cli.md lists {sorted(allowed)} for {case.command}")


def test_doctor_exits_1_exactly_when_the_host_cannot_build_labs(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "vnetbench", "doctor", "--json"], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == (0 if json.loads(proc.stdout)["ok"] else 1), proc.stderr
    assert proc.returncode in readme_table()["doctor"]
