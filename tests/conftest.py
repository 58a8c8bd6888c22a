"""Shared test fixtures: root-only marking and the leak checks.

Every root test is checked on its own: objects of dead vnetbench runs that appeared while it
ran and stayed (``SETTLE_S``), or a run it started that is still going, fail it at teardown
by name. The end of the session checks for anything no single test was seen to leave."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vnetbench.host.cgroups import hierarchies
from vnetbench.host.state import DISK_WORK_ROOT

OURS = re.compile(r"^vnb[0-9a-f]{4}-")
RUN_LINK = re.compile(r"^vnb[0-9a-f]{4}")
"""A run's link names: ``vnb<id>`` and a role (``vnb3f2as0``); the emulated machines of
``integration/machines.py`` (``vnbt<hex>c``) are their tests' own business."""


def lab_leftovers() -> list[str]:
    """Namespaces, links, rules, cgroups and on-disk run data of vnetbench runs still present."""
    left = []
    if os.path.isdir("/run/netns"):
        left += [f"netns {n}" for n in os.listdir("/run/netns") if OURS.match(n)]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    left += [f"link {line.split(':')[1].strip()}" for line in links.splitlines()
             if RUN_LINK.match(line.split(":")[1].strip())]
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
    from vnetbench.host.state import all_states

    live = {s.short_id for s in all_states() if s.owner_alive()}
    return [x for x in lab_leftovers() if not any(f"vnb{run_id}" in x for run_id in live)]


def signals_at_default() -> None:
    """``preexec_fn`` of a child a test will signal: SIGINT and SIGTERM at their default
    dispositions, whatever this test process inherited. A shell that starts ``nohup pytest
    ... &`` leaves SIGINT ignored, an ignored signal stays ignored across exec, and Python
    then installs no KeyboardInterrupt handler: the child would never see the test's Ctrl-C."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


@pytest.fixture
def python_signal_handlers() -> Iterator[None]:
    """For a test that signals its own process: SIGINT raises KeyboardInterrupt and SIGTERM
    is at its default, as in a process started from a terminal (restored after the test)."""
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
                signal.SIGTERM: signal.signal(signal.SIGTERM, signal.SIG_DFL)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


SETTLE_S = 5.0
"""How long a new object must stay to count as left behind: other runs on this machine (other
sessions, other users of it) build and tear down their own labs meanwhile."""

LEFT_BY: dict[str, list[str]] = {}
"""Test (node id) -> the objects it left behind (objects of dead runs that appeared during
it and stayed), for the end-of-session check."""

_TEST_START: set[str] = set()
"""Dead runs' objects present when the current test started (``new_leftovers``)."""


def settled(new: set[str], settle_s: float = SETTLE_S) -> set[str]:
    """Those of ``new`` (objects of dead runs) still there after ``settle_s`` seconds."""
    deadline = time.monotonic() + settle_s
    while new and time.monotonic() < deadline:
        time.sleep(0.2)
        new &= set(dead_leftovers())
    return new


def new_leftovers() -> list[str]:
    """Objects of dead runs that appeared since the current test started (a live run's are
    not leftovers yet: another session's, or one this test still holds)."""
    return sorted(set(dead_leftovers()) - _TEST_START)


def _live_children_runs() -> set[str]:
    """Run ids whose owner is alive and a descendant of this test process."""
    from vnetbench.host.state import all_states

    me, found = os.getpid(), set()
    for state in all_states():
        pid = state.owner_pid
        for _ in range(64):  # walk up the parents
            if pid in (me, 0, 1):
                break
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                break
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid == me and state.owner_alive():
            found.add(state.short_id)
    return found


@pytest.fixture(autouse=True)
def leftovers_named(request: pytest.FixtureRequest) -> Iterator[None]:
    """A root test fails at teardown, by name, if it left kernel objects of a dead run
    behind, or a run of its own still going (a holder that never stopped)."""
    if os.geteuid() != 0 or "root" not in request.node.keywords:
        yield
        return
    before = set(dead_leftovers())
    _TEST_START.clear()
    _TEST_START.update(before)
    live_before = _live_children_runs()
    yield
    new = settled(set(dead_leftovers()) - before)
    running = _live_children_runs() - live_before
    if new or running:
        LEFT_BY[request.node.nodeid] = sorted(new)
        what = [*sorted(new)[:10], *(f"run vnb{r} still going (its owner is a process this "
                                     "test started)" for r in sorted(running))]
        pytest.fail(f"{request.node.nodeid} left kernel objects behind: {what}", pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind() -> Iterator[None]:
    before = set(dead_leftovers()) if os.geteuid() == 0 else set()
    yield
    if os.geteuid() == 0:
        named = {x for left in LEFT_BY.values() for x in left}
        new = settled(set(dead_leftovers()) - before - named)
        assert not new, ("tests left kernel objects behind, not seen appear during any one "
                         f"root test (a test without the root mark?): {sorted(new)[:10]}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true",
                     help="also run the tests marked slow (outside the default suite: Hadoop "
                     "in VM guests under TCG takes most of an hour)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--slow"):
        later = pytest.mark.skip(reason="slow: outside the default suite (run with --slow)")
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(later)
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root: builds real namespaces")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)
