"""The install path on a stock Debian 12 (issue 32): benchmarks/stock_install.py makes (once;
cached in /var/cache/vnetbench) a debootstrap root filesystem from Debian's packages and runs
scripts/setup-python.sh in a copy of it under chroot, with the distribution's own
/usr/bin/python3, which refuses ``pip install`` (PEP 668); then ``vnetbench --version`` and
``vnetbench doctor`` from the command set-up put on PATH. Needs root, debootstrap
(scripts/setup-test.sh installs it), Debian's mirror and PyPI; about a minute with the cached
root filesystem, one more to make it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import vnetbench

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.root, pytest.mark.heavy]


@pytest.mark.skipif(shutil.which("debootstrap") is None,
                    reason="debootstrap not installed (scripts/setup-test.sh installs it)")
def test_setup_python_on_stock_debian12() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks/stock_install.py"), "--json"],
                          capture_output=True, text=True, timeout=3000, check=False)
    report = json.loads(done.stdout)
    steps = {s["name"]: s for s in report["steps"]}
    failed = [f"{s['name']} (exit {s['returncode']}): {s['output'][-2000:]}"
              for s in report["steps"] if s["returncode"] != 0]
    assert not failed and done.returncode == 0 and report["ok"], failed or done.stderr
    # a stock system: no Python before set-up, then Debian's own, externally managed
    assert report["facts"]["stock python3 before set-up"] == "none (minbase)"
    interpreter = steps["interpreter"]["output"].splitlines()
    assert interpreter[0] == "/usr/bin/python3.11" and interpreter[1].startswith("Python 3.11.")
    assert interpreter[2] == "/usr/lib/python3.11/EXTERNALLY-MANAGED"
    setup = steps["scripts/setup-python.sh"]["output"]
    assert "setup-python: apt-get install python3 python3-venv" in setup
    assert "requirements/run.txt" in setup
    # the command on PATH is the environment's, and it is this checkout's version
    assert steps["vnetbench --version"]["output"].splitlines() == [
        "/usr/local/bin/vnetbench", f"vnetbench {vnetbench.__version__}"]
    doctor = steps["vnetbench doctor"]["output"]
    assert "root: yes" in doctor and "  yes veth" in doctor and "  bridge            ok" in doctor
    assert "vnetbench-probe   /root/vnetbench/src/vnetbench/bin/vnetbench-probe" in doctor
    # nothing left: no mount under the scratch copy, the copy removed
    assert report["mounts_left"] == [] and "scratch copy kept" not in report["facts"]
