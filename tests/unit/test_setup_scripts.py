"""The set-up scripts' promises that need no root or network: the pinned locks cover every
dependency pyproject.toml names (with hashes, one version per package across both locks),
wireguard-go is pinned, a bad ``--with`` is one clear line, and CI runs the README's test
command."""

from __future__ import annotations

import re
import subprocess
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
