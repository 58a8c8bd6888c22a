"""`vnetbench run --out` where a run cannot be written alone: one line, exit 2, nothing built,
nothing written; and a scenario name that tries to escape `results/` stays inside it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ..conftest import new_leftovers, settled

pytestmark = pytest.mark.root

SCENARIO = {"name": "bad-out", "layers": ["host"], "workloads": [{"rr": {"duration": "0.2s"}}]}


def _run(scenario: Path, out: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vnetbench", "run", str(scenario), "--out", out],
                          capture_output=True, text=True, cwd=cwd, timeout=60, check=False)


@pytest.mark.parametrize("case", ["empty", "file", "under a file", "not empty", "proc", "sys"])
def test_bad_out_is_one_line_and_builds_nothing(tmp_path: Path, case: str) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    work = tmp_path / "cwd"
    work.mkdir()
    (tmp_path / "f").write_text("x")
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.txt").write_text("keep")
    out = {"empty": "", "file": str(tmp_path / "f"), "under a file": str(tmp_path / "f" / "o"),
           "not empty": str(full), "proc": "/proc/vnb-out", "sys": "/sys/vnb-out"}[case]
    result = _run(scenario, out, work)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetbench: error: --out"), result.stderr
    assert "Traceback" not in result.stderr
    assert settled(set(new_leftovers())) == set()  # other runs on the machine aside
    assert list(work.iterdir()) == [], "nothing may be written in the current directory"
    assert sorted(p.name for p in full.iterdir()) == ["mine.txt"]
    assert (tmp_path / "f").read_text() == "x"


def test_a_hostile_name_stays_under_results(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({**SCENARIO, "name": "../../../" + "x" * 300}))
    work = tmp_path / "cwd"
    work.mkdir()
    result = subprocess.run([sys.executable, "-m", "vnetbench", "run", str(scenario)],
                            capture_output=True, text=True, cwd=work, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    (run_dir,) = (work / "results").iterdir()
    assert (run_dir / "run.json").is_file() and len(run_dir.name) < 80
    assert sorted(p.name for p in work.iterdir()) == ["results"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd", "s.yaml"]
