"""Every file the package reads at run time that is not Python (scenarios, study packs, the MPI
benchmark's source, the Hadoop pom) is named by pyproject's package data, so a built wheel
carries it; and the modules that find files relative to their own place find them."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "vnetbench"


def package_data() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs: list[str] = config["tool"]["setuptools"]["package-data"]["vnetbench"]
    return globs


def data_files() -> list[str]:
    found = []
    for path in PACKAGE.rglob("*"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "bin" or "__pycache__" in rel.parts or path.is_dir() or path.suffix == ".py":
            continue
        found.append(rel.as_posix())
    return sorted(found)


def test_every_data_file_is_package_data() -> None:
    globs = package_data()
    files = data_files()
    assert any(f.startswith("studies/") for f in files)  # the walk found the study packs
    missing = [f for f in files if not any(fnmatch(f, g) for g in globs)]
    assert missing == [], f"add these to [tool.setuptools.package-data] in pyproject.toml: {missing}"
def test_paths_the_package_derives_from_its_own_place() -> None:
    """Modules that find files relative to themselves still find them after a move."""
    from vnetbench.cli.main import default_scenario_path
    from vnetbench.host import binaries
    from vnetbench.provenance import gitinfo
    from vnetbench.studies.model import STUDIES_DIR
    from vnetbench.workloads.mpi.bench import SOURCE

    assert binaries.PACKAGE_BIN.parent == PACKAGE
    assert (gitinfo.SOURCE_ROOT / "pyproject.toml").is_file()
    assert (binaries._SOURCE_ROOT / "probe" / "Cargo.toml").is_file()
    assert default_scenario_path().is_file()
    assert STUDIES_DIR == PACKAGE / "studies" and SOURCE.is_file()
