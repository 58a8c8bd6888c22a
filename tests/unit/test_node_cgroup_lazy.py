"""``CgroupSet.create(..., lazy=True)`` on a directory laid out as a v1 cgroup root: nothing is
made until the node's directories are asked for, then they are made once (and the run's)."""

from __future__ import annotations

from pathlib import Path

from vnetbench.host.cgroups import CgroupSet
from vnetbench.lab.topology import Resources


def v1_root(tmp_path: Path) -> Path:
    for ctrl in ("cpu", "cpuacct", "cpuset", "memory"):
        (tmp_path / ctrl).mkdir()
    return tmp_path


def test_lazy_node_cgroup_is_made_when_first_asked_for(tmp_path: Path) -> None:
    root = v1_root(tmp_path)
    node = CgroupSet("vnbt1", root=root).create("n0", Resources(), lazy=True)
    assert not (root / "cpuacct" / "vnbt1").exists()
    files = node.procs_files
    assert files == (root / "cpuacct" / "vnbt1" / "n0" / "cgroup.procs",)
    assert (root / "cpuacct" / "vnbt1" / "n0").is_dir()
    assert not (root / "cpu" / "vnbt1").exists()  # accounting only: no other hierarchy
    assert node.dirs == (root / "cpuacct" / "vnbt1" / "n0",)  # asked again: same, no error


def test_node_cgroup_with_limits_is_made_at_once(tmp_path: Path) -> None:
    root = v1_root(tmp_path)
    CgroupSet("vnbt2", root=root).create("n1", Resources(cpus=0.5))
    assert (root / "cpuacct" / "vnbt2" / "n1").is_dir()
    assert (root / "cpu" / "vnbt2" / "n1" / "cpu.cfs_quota_us").read_text() == "50000"
