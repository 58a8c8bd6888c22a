"""Shared test fixtures: root-only marking and the end-of-session leak check."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from vnetbench.cgroups import hierarchies
from vnetbench.state import DISK_WORK_ROOT

OURS = re.compile(r"^vnb[0-9a-f]{4}-")


def lab_leftovers() -> list[str]:
    """Namespaces, links, rules, cgroups and on-disk run data of vnetbench runs still present."""
    left = []
    if os.path.isdir("/run/netns"):
        left += [f"netns {n}" for n in os.listdir("/run/netns") if OURS.match(n)]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    left += [f"link {line.split(':')[1].strip()}" for line in links.splitlines()
             if line.split(":")[1].strip().startswith("vnb")]
    rules = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    left += [f"rule {line}" for line in rules.splitlines() if "vnb" in line]
    for base in hierarchies():  # every one: container engines use all of them
        left += [f"cgroup {base}/{d.name}" for d in base.iterdir()
                 if d.is_dir() and OURS.match(d.name + "-")]
    left += [f"disk vnb{d.name} {d}" for d in DISK_WORK_ROOT.glob("*")
             if re.fullmatch(r"[0-9a-f]{4}", d.name)]
    left += [f"process qemu {name}" for name in qemu_guest_names() if OURS.match(name)]
    return left


def qemu_guest_names() -> list[str]:
    """The ``-name`` of every running QEMU (the vm backends name guests ``vnb<id>-...``)."""
    names = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if argv and "qemu-system" in argv[0] and "-name" in argv[:-1]:
            names.append(argv[argv.index("-name") + 1])
    return names


def dead_leftovers() -> list[str]:
    """Leftovers of runs whose owner process is gone (live runs of others are not leaks)."""
    from vnetbench.state import all_states

    live = {s.short_id for s in all_states() if s.owner_alive()}
    return [x for x in lab_leftovers() if not any(f"vnb{run_id}" in x for run_id in live)]


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind() -> Iterator[None]:
    before = set(dead_leftovers()) if os.geteuid() == 0 else set()
    yield
    if os.geteuid() == 0:
        new = set(dead_leftovers()) - before
        assert not new, f"tests left kernel objects behind: {sorted(new)[:10]}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root: builds real namespaces")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)
