"""The set-up scripts' promises that need no root or network: the pinned locks cover every
dependency pyproject.toml names (with hashes, one version per package across both locks),
wireguard-go is pinned, a bad ``--with`` is one clear line, CI runs the README's test
command, and an interrupted install leaves no policy-rc.d behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _name(requirement: str) -> str:
    """The normalised project name of a requirement string (PEP 503)."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _lock(path: Path) -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of a ``uv pip compile --generate-hashes`` file."""
    pins: dict[str, tuple[str, int]] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", path.read_text()):
        head = re.match(r"([A-Za-z0-9._-]+)==([^ ;\\\n]+)", block)
        if head:
            pins[_name(head.group(1))] = (head.group(2), block.count("--hash=sha256:"))
    return pins


def test_the_locks_pin_every_dependency_with_hashes() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    runtime = {_name(r) for r in [*project["project"]["dependencies"],
                                  *project["project"]["optional-dependencies"]["parquet"],
                                  *project["build-system"]["requires"]]}
    dev = runtime | {_name(r) for r in project["project"]["optional-dependencies"]["dev"]}
    run_lock, dev_lock = _lock(ROOT / "requirements/run.txt"), _lock(ROOT / "requirements/dev.txt")
    assert runtime <= set(run_lock), sorted(runtime - set(run_lock))
    assert dev <= set(dev_lock), sorted(dev - set(dev_lock))
    assert set(run_lock) <= set(dev_lock)
    for name, (version, hashes) in run_lock.items():
        assert hashes >= 1 and dev_lock[name][1] >= 1, name
        assert dev_lock[name][0] == version, (name, version, dev_lock[name][0])


def test_wireguard_go_is_pinned() -> None:
    setup = (ROOT / "scripts/setup.sh").read_text()
    pins = re.findall(r"^WIREGUARD_GO=golang\.zx2c4\.com/wireguard@(\S+)$", setup, re.MULTILINE)
    assert len(pins) == 1 and re.fullmatch(r"v\d+\.\d+\.\d+(-[0-9.]+-[0-9a-f]{12})?", pins[0])


def test_an_unknown_part_is_one_clear_line() -> None:
    done = subprocess.run(["bash", str(ROOT / "scripts/setup.sh"), "--with", "hadoop,bogus"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "setup: error: no part named 'bogus' (choose from apps, hadoop, docker, vm, kubernetes, all)"]


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text().splitlines()
    assert readme[0] == "```sh" and readme[3] == "```"
    test_command = readme[2].split("#")[0].strip()
    ci = [line for line in (ROOT / ".ci/run").read_text().splitlines()
          if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == [test_command]


def test_an_interrupted_install_leaves_no_policy_behind(tmp_path: Path) -> None:
    """apt_install --services-stay-down writes a policy-rc.d that keeps services from
    starting; SIGTERM during apt-get must still remove it (left behind, no service would
    start after later upgrades). apt-get and dpkg-query are stand-ins on PATH here."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("dpkg-query", "exit 1"), ("apt-get", '[ "$1" = update ] || { touch "$STARTED"; sleep 30; }')):
        tool = bin_dir / name
        tool.write_text(f"#!/bin/sh\n{body}\n")
        tool.chmod(0o755)
    policy, started = tmp_path / "policy-rc.d", tmp_path / "started"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "VNB_POLICY_RC": str(policy),
           "STARTED": str(started)}
    script = f'source {ROOT / "scripts" / "lib.sh"}; apt_install test --services-stay-down pkg'
    proc = subprocess.Popen(["bash", "-c", script], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not (started.exists() and policy.exists()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert policy.exists(), "the stand-in install never started"
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    deadline = time.monotonic() + 10  # the subshell's trap may run just after bash is gone
    while policy.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not policy.exists()
