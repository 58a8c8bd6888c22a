"""Bad, hostile or silently wrong scenarios through the real CLI: ``vnetbench plan FILE`` and
``vnetbench run FILE --out DIR`` each end with exit code 2 and exactly one stderr line
``vnetbench: error: ...`` (never a traceback), build nothing (no namespace or state file of a
run left) and write nothing (the working directory stays empty, the output directory holds
no run.json). Every case fails while the scenario is loaded, so each takes a moment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from vnetbench.host.state import STATE_DIR, all_states

ROOT = Path(__file__).resolve().parents[2]


def _bomb() -> bytes:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{','.join(['*' + prev] * 9)}]")
    return ("\n".join(lines) + "\nlayers: [host]\n").encode()


@dataclass(frozen=True)
class Case:
    name: str
    expect: str
    """A part of the one error line."""
    content: bytes = b""
    kind: str = "file"
    """``file`` (``content`` written to it), ``fifo``, ``dir`` or ``path`` (``content`` is
    the path to use as it is)."""


RR = b"layers: [host, bridge]\nworkloads:\n  - rr: "
CASES = [
    Case("binary", "binary file", b"\x7fELF\x02\x01\x01\x00\x00\x00\x00"),
    Case("not-utf8", "is not UTF-8 text", b"name: caf\xe9\nlayers: [host]\n"),
    Case("empty", "empty scenario: give at least layers or workloads", b""),
    Case("comments-only", "empty scenario", b"# a comment\n"),
    Case("no-layers-no-workloads", "neither layers nor workloads", b"name: x\nrepeat: 2\n"),
    Case("fifo", "is a FIFO; a scenario must be a regular file", kind="fifo"),
    Case("dev-zero", "is a device; a scenario must be a regular file", b"/dev/zero", "path"),
    Case("directory", "is a directory", kind="dir"),
    Case("oversized", "at most 1 MiB", b"layers: [host]\n" + b"#" * (1024 * 1024) + b"\n"),
    Case("alias-bomb", "expands to more than 100000 values", _bomb()),
    Case("recursive-alias", "an alias refers to a list or mapping that contains it",
         b"layers: &a [host, *a]\n"),
    Case("deep-nesting", "nested deeper than 64 levels",
         b"layers: [host]\nname: " + b"[" * 500 + b"]" * 500 + b"\n"),
    Case("duplicate-key", "line 3: duplicate key 'nodes' (first given on line 2)",
         b"layers: [host]\nnodes: 2\nnodes: 4\n"),
    Case("bool-key", "key 'on' is read as bool", b"layers: [host]\non: 1\n"),
    Case("control-char", "control character", b"layers: [host]\nname: a\x1b[31m\n"),
    Case("duration-inf", "rr: duration: a duration must be a finite number",
         RR + b"{duration: .inf}\n"),
    Case("duration-days", "a duration must be at most 1 day", RR + b"{duration: 48h}\n"),
    Case("repeat-huge", "repeat: Input should be less than or equal to 1000",
         b"layers: [host]\nrepeat: 1000000000\n"),
    Case("trials-huge", "more than 100000 trials",
         b"layers: [host, bridge]\nrepeat: 1000\nnodes: ["
         + b", ".join(str(n).encode() for n in range(2, 102)) + b"]\n"),
    Case("nodes-true", "nodes: true is not a number", b"layers: [host]\nnodes: true\n"),
    Case("jitter-over-delay", "jitter (10 ms) is larger than delay (1 ms)",
         b"layers: [host]\nlink: {delay: 1ms, jitter: 10ms}\n"),
    Case("rate-bytes", "'100MBps' is ambiguous", b"layers: [host]\nlink: {rate: 100MBps}\n"),
    Case("request-10G", "request of 10737418240 bytes is more than the probe accepts",
         RR + b"{request: 10G}\n"),
    Case("cpuset-absent", "resources.cpuset: CPUs 99-200 are not usable here",
         b"layers: [host]\nresources: {cpuset: '99-200'}\n"),
    Case("memory-tiny", "resources.memory: 1 B is below the 16 MiB minimum",
         b"layers: [host]\nresources: {memory: 1}\n"),
    Case("hadoop-capacity", "8001 nodes (8000 + 1 the workloads add, Hadoop's master) on 1 host(s)",
         b"layers: [bridge]\nnodes: 8000\nworkloads: [{hadoop: {}}]\n"),
    Case("hadoop-relative-root", "is not an absolute path",
         b"layers: [bridge]\nworkloads: [{hadoop: {data_root: data}}]\n"),
    Case("rr-one-node", "the rr workload needs at least 2 nodes",
         b"layers: [host]\nnodes: 1\nworkloads: [rr]\n"),
]


def _ipvlan_missing() -> bool:
    if os.geteuid() != 0:
        return False
    from vnetbench.backends.catalog import get_layer
    from vnetbench.errors import UnsupportedError

    try:
        get_layer("ipvlan").check_supported()
    except UnsupportedError:
        return True
    return False


IPVLAN = Case("ipvlan-unsupported", "layers: layer 'ipvlan' needs the kernel feature 'ipvlan'",
              b"layers: [bridge, ipvlan]\n")


def _scenario(case: Case, where: Path) -> Path:
    if case.kind == "path":
        return Path(case.content.decode())
    path = where / f"{case.name}.yaml"
    if case.kind == "fifo":
        os.mkfifo(path)
    elif case.kind == "dir":
        path.mkdir()
    else:
        path.write_bytes(case.content)
    return path


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return {line.split()[0] for line in out.stdout.splitlines() if line.startswith("vnb")}


def _state_files() -> set[str]:
    return {p.name for p in STATE_DIR.glob("*.json")} if STATE_DIR.is_dir() else set()


def _ours(new: set[str]) -> list[str]:
    """Namespaces or state files that appeared during the command and that no live run
    (another test, another user's run) owns: left by the command."""
    live = [s.short_id for s in all_states() if s.owner_alive()]
    return sorted(n for n in new
                  if not any(n.startswith(f"vnb{i}") or n == f"{i}.json" for i in live))


def _run_cli(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.run([sys.executable, "-m", "vnetbench", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("command", ["plan", "run"])
@pytest.mark.parametrize("case", [*CASES, IPVLAN], ids=lambda c: c.name)
def test_bad_scenario_is_one_line_and_builds_nothing(case: Case, command: str,
                                                     tmp_path: Path) -> None:
    if case is IPVLAN and not _ipvlan_missing():
        pytest.skip("this host has ipvlan (or the test is not root): nothing to refuse")
    inputs, cwd, outs = tmp_path / "in", tmp_path / "cwd", tmp_path / "outs"
    for d in (inputs, cwd, outs):
        d.mkdir()
    scenario = _scenario(case, inputs)
    out = outs / "run"
    argv = ["plan", str(scenario)] if command == "plan" else ["run", str(scenario), "--out",
                                                              str(out)]
    namespaces, states = _namespaces(), _state_files()

    proc = _run_cli(argv, cwd)

    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("vnetbench: error: "), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert case.expect in lines[0], lines[0]
    assert proc.stdout == ""
    assert not _ours(_namespaces() - namespaces), "namespaces left"
    assert not _ours(_state_files() - states), "state files left"
    assert list(cwd.iterdir()) == [], "wrote into the working directory"
    assert [p.name for p in outs.iterdir()] in ([], ["run"])
    assert not (out / "run.json").exists()
    if out.exists():
        assert list(out.iterdir()) == [], "wrote into the output directory"
