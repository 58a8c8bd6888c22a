"""The interactive lab for real: ``vnetbench up`` keeps a lab, ``exec`` runs in its nodes
with the exit status passed through, ``clean`` leaves a kept lab alone, ``down`` leaves
nothing; a lab whose keeper was killed is cleaned like any dead run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vnetbench.host.netns import NETNS_DIR
from vnetbench.host.state import STATE_DIR

from ..conftest import lab_leftovers

pytestmark = pytest.mark.root


def vnb(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vnetbench", *args], capture_output=True,
                          text=True, timeout=timeout)


def _up(*args: str) -> tuple[str, int, str]:
    """(run id, keeper pid, up's output)."""
    proc = vnb("up", *args)
    assert proc.returncode == 0, proc.stderr
    match = re.search(r"lab ([0-9a-f]{4}) .* kept by process ([0-9]+)", proc.stdout)
    assert match, proc.stdout
    return match.group(1), int(match.group(2)), proc.stdout


def _ours(run_id: str) -> list[str]:
    """What of run ``run_id`` is on this host: namespaces, links, rules, cgroups, disk data,
    its state file (other runs on the machine are not this test's business)."""
    left = [x for x in lab_leftovers() if f"vnb{run_id}" in x]
    if NETNS_DIR.is_dir():
        left += [n for n in os.listdir(NETNS_DIR) if n.startswith(f"vnb{run_id}")]
    return left + [p.name for p in STATE_DIR.glob(f"{run_id}.json")]


def test_up_exec_down_round_trip_leaves_nothing(tmp_path: Path) -> None:
    scenario = tmp_path / "lab.yaml"
    scenario.write_text("name: kept\nnodes: [2, 3]\nlayers: [host, routed]\n")
    refused = vnb("up", str(scenario), "--layer", "routed")
    assert refused.returncode == 2 and "--nodes/--hosts" in refused.stderr
    run_id, keeper, text = _up(str(scenario), "--layer", "routed", "--nodes", "3")
    try:
        addresses = dict(re.findall(r"^  (n[0-9])\s+([0-9.]+)", text, re.M))
        assert list(addresses) == ["n0", "n1", "n2"]
        assert f"ip netns exec vnb{run_id}-n0 bash" in text
        lab = ["--lab", run_id]
        shown = vnb("exec", *lab, "n2", "--", "ip", "-br", "-4", "addr")
        assert shown.returncode == 0 and addresses["n2"] in shown.stdout, shown.stderr
        reach = vnb("exec", *lab, "n0", "--", sys.executable, "-c",
                    "import socket,sys; s=socket.socket(); s.settimeout(5); "
                    "s.connect_ex((sys.argv[1], 9)) in (0, 111) or sys.exit(9)",
                    addresses["n1"])
        assert reach.returncode == 0, reach.stderr  # reached n1 (open or refused, no timeout)
        assert vnb("exec", *lab, "n1", "--", "sh", "-c", "exit 7").returncode == 7
        missing = vnb("exec", *lab, "n1", "--", "no-such-program")
        assert missing.returncode == 127 and "no-such-program" in missing.stderr
        assert vnb("exec", *lab, "n9", "--", "true").returncode == 2
        # `labs` lists it: id, name, layer, nodes, hosts, keeper alive
        listed = vnb("labs")
        row = next(line for line in listed.stdout.splitlines() if line.startswith(run_id))
        assert row.split()[1:5] == ["kept", "routed", "3", "1"], row
        assert row.endswith(f"alive (pid {keeper})"), row
        entry = next(e for e in json.loads(vnb("labs", "--json").stdout) if e["id"] == run_id)
        assert entry["keeper"] == keeper and entry["keeper_alive"] is True
        assert 0 <= entry["age_s"] < 120
        # a kept lab's keeper lives: clean leaves it alone
        assert vnb("clean").returncode == 0
        assert f"netns vnb{run_id}-n2" in _ours(run_id)
        down = vnb("down", *lab)
        assert down.returncode == 0, down.stderr
        assert f"lab {run_id} is down" in down.stdout
    finally:
        if _ours(run_id):
            vnb("down", "--lab", run_id)
    assert not _ours(run_id)
    assert not os.path.exists(f"/proc/{keeper}") or b"kept_lab" not in Path(
        f"/proc/{keeper}/cmdline").read_bytes()


def test_a_lab_whose_keeper_was_killed_is_cleaned() -> None:
    run_id, keeper, _ = _up("--layer", "bridge", "--nodes", "2")
    os.kill(keeper, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{keeper}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _ours(run_id)  # the lab outlived its keeper: a dead run's leftovers
    row = next(line for line in vnb("labs").stdout.splitlines() if line.startswith(run_id))
    assert f"dead (pid {keeper}): leftovers, `vnetbench clean` removes them" in row
    cleaned = vnb("clean")
    assert cleaned.returncode == 0 and f"removed state of run {run_id}" in cleaned.stdout
    assert not _ours(run_id)
