"""Every "How do I" recipe of README.md, run as written.

A recipe is the fenced block after a ``<!-- recipe: NAME -->`` line (shell commands, one a
line; ``#`` starts a comment); a ``<!-- recipe-file: NAME FILE -->`` line puts the next block
into ``FILE`` for recipe ``NAME``, and a ``python`` block after ``<!-- recipe: NAME -->`` is run
by this interpreter. Each recipe runs in a directory of its own, its ``vnetbench`` being this
checkout's (``python -m vnetbench``). The recipe for your own machines runs against emulated
machines reached over SSH (``machines``): the README's example addresses are replaced by
theirs. The recipes that measure run at once (``recipes``), each still as written. A recipe
that lists no command, or a README that lost one of them, fails."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..conftest import dead_leftovers, settled
from .machines import emulated_machines

pytestmark = [pytest.mark.root, pytest.mark.heavy]

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
RECIPES = ("compare-layers", "wan-delay", "gate-ci", "own-machines", "notebook", "keep-a-lab")

_BLOCK = re.compile(r"<!-- recipe(?P<file>-file)?: (?P<name>[a-z-]+)(?: (?P<path>\S+))? -->\n"
                    r"```(?P<lang>[a-z]*)\n(?P<body>.*?)```", re.S)


def blocks() -> list[tuple[str, str, str | None, str]]:
    """(recipe, language, file or None, text) of every recipe block, in README order."""
    return [(m["name"], m["lang"], m["path"] if m["file"] else None, m["body"])
            for m in _BLOCK.finditer(README.read_text())]


def commands(text: str) -> list[list[str]]:
    out = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            out.append(shlex.split(line))
    return out


def run_recipe(name: str, cwd: Path, replace: dict[str, str] | None = None,
               env: dict[str, str] | None = None) -> list[subprocess.CompletedProcess[str]]:
    """Run recipe ``name`` in ``cwd``; the result of each command (a non-zero exit of any
    but the last fails the test; the caller judges the last)."""
    mine = [b for b in blocks() if b[0] == name]
    assert mine, f"README has no recipe {name!r}"
    done = []
    for _, lang, path, body in mine:
        for old, new in (replace or {}).items():
            body = body.replace(old, new)
        if path is not None:
            (cwd / path).write_text(body)
            continue
        if lang == "python":
            done.append(subprocess.run([sys.executable, "-c", body], cwd=cwd, env=env,
                                       capture_output=True, text=True, timeout=300))
            continue
        for argv in commands(body):
            assert argv[0] == "vnetbench", f"{name}: {argv}"
            if done:
                assert done[-1].returncode in (0, 1), done[-1].stderr[-2000:]
            stdout = None
            if ">" in argv:  # a redirection of its output into a file
                argv, stdout = argv[:argv.index(">")], argv[argv.index(">") + 1]
            got = subprocess.run([sys.executable, "-m", "vnetbench", *argv[1:]], cwd=cwd,
                                 env=env, capture_output=True, text=True, timeout=900)
            if stdout is not None:
                (cwd / stdout).write_text(got.stdout)
            done.append(got)
    assert done, f"recipe {name} runs nothing"
    return done


def test_the_readme_holds_every_recipe() -> None:
    names = [b[0] for b in blocks()]
    assert set(RECIPES) <= set(names), set(RECIPES) - set(names)


def compare_then_notebook(cwd: Path) -> list[subprocess.CompletedProcess[str]]:
    return [*run_recipe("compare-layers", cwd), *run_recipe("notebook", cwd)]


def own_machines(cwd: Path) -> list[subprocess.CompletedProcess[str]]:
    with emulated_machines(2) as m:
        specs = m.specs
        replace = {f"root@192.0.2.{10 + k}": spec.ssh for k, spec in enumerate(specs)}
        replace["underlay: eth1"] = f"underlay: {specs[0].underlay}"
        return run_recipe("own-machines", cwd, replace, env={**os.environ})


LONG: dict[str, Callable[[Path], list[subprocess.CompletedProcess[str]]]] = {
    "own-machines": own_machines,
    "gate-ci": lambda cwd: run_recipe("gate-ci", cwd),
    "compare-layers": compare_then_notebook,
    "wan-delay": lambda cwd: run_recipe("wan-delay", cwd),
}
"""The recipes that measure (a minute or two each), by the directory they run in."""


@dataclass
class Done:
    cwd: Path
    results: Future[list[subprocess.CompletedProcess[str]]]

    def get(self) -> list[subprocess.CompletedProcess[str]]:
        return self.results.result()  # the recipe's own failure, if it failed


@pytest.fixture(scope="module")
def recipes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Done]:
    """The measuring recipes, run at once, each in a directory of its own (none reads what
    another makes). A run's rounds last as long whatever else runs beside it, so the module
    waits for the longest recipe, not for their sum; nothing any of them left behind fails
    them here, as the per-test check would."""
    before = set(dead_leftovers())
    with ThreadPoolExecutor(len(LONG)) as pool:
        done = {name: Done(cwd := tmp_path_factory.mktemp(name), pool.submit(recipe, cwd))
                for name, recipe in LONG.items()}
    left = settled(set(dead_leftovers()) - before)
    assert not left, f"the recipes left kernel objects behind: {sorted(left)[:10]}"
    return done


def test_compare_two_layers_then_plot_in_a_notebook(recipes: dict[str, Done]) -> None:
    *compare, notebook = recipes["compare-layers"].get()
    for got in compare:
        assert got.returncode == 0, got.stderr[-2000:]
        assert "report: " in got.stdout
    assert notebook.returncode == 0, notebook.stderr[-2000:]
    assert "vxlan" in notebook.stdout and "host" in notebook.stdout


def test_add_wan_delay(recipes: dict[str, Done]) -> None:
    (got,) = recipes["wan-delay"].get()
    assert got.returncode == 0, got.stderr[-2000:]
    cwd = recipes["wan-delay"].cwd
    run = json.loads((next(cwd.glob("results/*/run.json"))).read_text())
    assert run["scenario"]["overrides"] and "link.delay=10ms" in " ".join(
        run["scenario"]["overrides"])


def test_gate_ci_on_a_regression(recipes: dict[str, Done]) -> None:
    done = recipes["gate-ci"].get()
    assert done[-1].returncode in (0, 1), done[-1].stderr[-2000:]  # passed, or a regression
    gate = ET.parse(recipes["gate-ci"].cwd / "gate.xml").getroot()
    assert gate.tag in ("testsuite", "testsuites") and gate.iter("testcase")
    assert done[-1].returncode == 0, done[-1].stderr[-2000:]  # two runs: no change point yet
    summary = (recipes["gate-ci"].cwd / "history.md").read_text()
    assert "history check: passed" in summary and "2 runs" in summary


def test_use_my_own_machines(recipes: dict[str, Done]) -> None:
    done = recipes["own-machines"].get()
    for got in done:
        assert got.returncode == 0, got.stderr[-2000:]
    assert "report: " in done[0].stdout


def test_keep_a_lab_to_poke_at(tmp_path: Path) -> None:
    done = run_recipe("keep-a-lab", tmp_path)
    for got in done:
        assert got.returncode == 0, got.stderr[-2000:]
    assert "inet " in done[1].stdout or "UP" in done[1].stdout  # the node's addresses
