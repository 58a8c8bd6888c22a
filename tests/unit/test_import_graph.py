"""The package's import graph: no cycles (module-level or deferred imports alike; imports
under ``TYPE_CHECKING`` are for the type checker only), no private names imported across
packages, and every package imports on its own."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "vnetbench"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}
PACKAGES = sorted(name for name, p in MODULES.items() if p.name == "__init__.py")


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports_of(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(imported module, names taken from it) for every import outside TYPE_CHECKING."""
    found: list[tuple[str, tuple[str, ...]]] = []

    def visit(node: ast.AST) -> None:
        if _type_checking_only(node):
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = tuple(a.name for a in node.names)
            # `from package import module` imports the module
            subs = [f"{node.module}.{n}" for n in names if f"{node.module}.{n}" in MODULES]
            found.append((node.module, tuple(n for n in names
                                             if f"{node.module}.{n}" not in MODULES)))
            found.extend((s, ()) for s in subs)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return [(m, n) for m, n in found if m == PACKAGE or m.startswith(PACKAGE + ".")]


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        graph[name] = {m for m, _ in imports_of(path) if m in MODULES and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    graph = import_graph()
    assert "vnetbench.backends.registry" in graph["vnetbench.backends.lab"]  # the graph is read
    assert "vnetbench.run.runner" in graph["vnetbench.cli.main"]  # deferred imports count too
    found = cycles(graph)
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def _package_of(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def test_no_private_names_imported_across_packages() -> None:
    crossing = []
    for name, path in MODULES.items():
        for module, names in imports_of(path):
            if module not in MODULES:
                continue
            for imported in names:
                dunder = imported.startswith("__") and imported.endswith("__")  # __version__
                if imported.startswith("_") and not dunder and _package_of(module) != _package_of(name):
                    crossing.append(f"{name} imports {module}.{imported}")
    assert crossing == []


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_alone(package: str) -> None:
    proc = subprocess.run([sys.executable, "-c", f"import {package}"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


LAYERS_OF_THE_PACKAGE: tuple[tuple[str, ...], ...] = (
    ("vnetbench", "errors", "units", "signals", "userpaths", "jsontypes"),  # the face, base values
    ("results",),      # a value package anyone may import
    ("lab",),          # what a lab is: topology, kernel plan, placement
    ("host",),         # this host's kernel and programs
    ("collectors",),   # evidence read from /proc and /sys
    ("layers",),       # each layer's plan
    ("workloads",),    # what runs across a lab: sees nodes and a lab view, no backend
    ("backends",),     # realising a lab: the registry, open_lab, each backend's package
    ("scenario",),     # what a user asks for
    ("provenance",),   # where a result came from
    ("run",),          # the run: rounds, sessions, evidence, platform
    ("explain",),      # why a layer costs what it costs
    ("report",),       # tables, figures, the page
    ("studies",),      # the seed studies, reproduced and judged
    ("history",),      # runs over time: the store, series, change points
    ("cli", "__main__"),  # the command line
)
"""The package in pipeline order: a module may import from its own package and from packages
on earlier lines only (``docs/architecture.md`` says why each is where it is)."""


def level_of(module: str) -> int:
    """The line of LAYERS_OF_THE_PACKAGE that holds ``module``'s top-level package."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else parts[0]
    for level, names in enumerate(LAYERS_OF_THE_PACKAGE):
        if top in names:
            return level
    raise AssertionError(f"{module} is in no line of LAYERS_OF_THE_PACKAGE: place its package")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a package to one on a later line of the order."""
    return sorted(f"{name} imports {target}" for name, targets in graph.items()
                  for target in targets if level_of(target) > level_of(name))


def test_the_order_check_finds_an_upward_import() -> None:
    assert upward_imports({"vnetbench.results.stats": {"vnetbench.report.tables"}}) \
        == ["vnetbench.results.stats imports vnetbench.report.tables"]
    assert upward_imports({"vnetbench.report.tables": {"vnetbench.results.stats"}}) == []
    with pytest.raises(AssertionError, match=r"vnetbench\.newthing"):
        level_of("vnetbench.newthing.x")


def test_packages_import_only_earlier_ones() -> None:
    graph = import_graph()
    for name in graph:  # every module is placed
        level_of(name)
    assert upward_imports(graph) == []


def test_results_import_only_base_values() -> None:
    allowed = {"errors", "units", "userpaths", "results"}
    graph = import_graph()
    outside = sorted(f"{name} imports {target}" for name, targets in graph.items()
                     if name.startswith("vnetbench.results") for target in targets
                     if target.split(".")[1] not in allowed)
    assert outside == []


def test_workloads_reach_nodes_never_namespaces() -> None:
    graph = import_graph()
    reaching = sorted(f"{name} imports {target}" for name, targets in graph.items()
                      if name.startswith("vnetbench.workloads") for target in targets
                      if target == "vnetbench.host.netns")
    assert reaching == []
