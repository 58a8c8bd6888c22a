"""Nodes' cgroups: a node without limits gets its (accounting) cgroup only when a process
first joins it, so a build-only lab makes none; a node with limits has them from the build.
Both leave nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetbench.backends.lab import open_lab
from vnetbench.host.cgroups import CGROUP_ROOT, cgroup_version, hierarchies
from vnetbench.lab.spec import LabSpec
from vnetbench.lab.topology import Resources

pytestmark = pytest.mark.root


def run_dirs(prefix: str) -> list[Path]:
    return [base / prefix for base in hierarchies() if (base / prefix).is_dir()]


def test_a_node_without_limits_gets_its_cgroup_when_a_process_joins() -> None:
    with open_lab(LabSpec("bridge", nodes=3)) as lab:
        prefix = lab.prefix
        assert run_dirs(prefix) == [], "a lab nobody ran anything in made cgroups"
        out = lab.nodes[1].run(["cat", "/proc/self/cgroup"])
        assert f"/{prefix}/n1" in out.stdout, out.stdout
        made = {p.name for d in run_dirs(prefix) for p in d.iterdir() if p.is_dir()}
        assert made == {"n1"}, made
        assert lab.nodes[1].cgroup is not None and lab.nodes[1].cgroup.cpu_usage_ns() > 0
    assert run_dirs(prefix) == []


def test_a_node_with_limits_has_its_cgroups_from_the_build() -> None:
    with open_lab(LabSpec("bridge", nodes=2, resources=Resources(cpus=0.5, memory=64 << 20))) as lab:
        prefix = lab.prefix  # looked at before anything asks the nodes for their cgroups
        # v1: the hierarchies of the two limits; v2: the one unified tree
        bases = ([CGROUP_ROOT / "cpu", CGROUP_ROOT / "memory"] if cgroup_version() == 1
                 else [CGROUP_ROOT])
        for base in bases:
            for node in ("n0", "n1"):
                assert (base / prefix / node).is_dir(), (base, node)
    assert run_dirs(prefix) == []
