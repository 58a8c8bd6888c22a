"""``vnetbench report RUN_DIR --baseline LAYER`` through the real CLI in a subprocess: the
report sets every layer beside the chosen one, and a layer the run does not have is one
error line (exit 2) naming the layers it has, with no report written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "evidence" / "run_layers"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    path = os.environ.get("PYTHONPATH", "")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + (os.pathsep + path if path else "")}
    return subprocess.run([sys.executable, "-m", "vnetbench", *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_report_beside_another_layer(tmp_path: Path) -> None:
    run_dir = Path(shutil.copytree(RUN, tmp_path / "run"))
    done = _cli("report", str(run_dir), "--baseline", "bridge")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"report: {run_dir / 'report.html'}\n"
    html = (run_dir / "report.html").read_text()
    assert "relative to baseline (<code>bridge</code>)" in html
    table = re.search(r'<table class="headline" id="headline-table">(.*?)</table>', html, re.S)
    assert table is not None
    baseline_row = re.search(r'data-layer="bridge"></span>bridge</th>(.*?)</tr>',
                             table.group(1), re.S)
    assert baseline_row is not None and 'class="baseline"' in baseline_row.group(1)
    assert 'data-layer="host"></span>host</th><td class="baseline"' not in table.group(1)


def test_a_layer_the_run_does_not_have_is_one_error_line(tmp_path: Path) -> None:
    run_dir = Path(shutil.copytree(RUN, tmp_path / "run"))
    done = _cli("report", str(run_dir), "--baseline", "bridg")
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0] == (f"vnetbench: error: --baseline bridg: run {run_dir} has no layer of "
                        "that name (did you mean bridge?); it measured bridge, host, vxlan, "
                        "wireguard")
    assert not (run_dir / "report.html").exists()
