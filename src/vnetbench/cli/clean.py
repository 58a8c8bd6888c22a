"""``vnetbench clean``: remove what killed runs left behind, and only that.

A leftover is anything of a run whose owner process is gone: the namespaces (containers'
attached ones included), processes (recorded PIDs whose start time still matches, and any
process inside those namespaces: Docker engines with their containerd, shims and
docker-proxy live in the emulated hosts' namespaces), cgroups in every hierarchy (container
engines use them all), WireGuard sockets, work files listed in its state file and its
on-disk data (``/var/tmp/vnetbench/<id>``: HDFS blocks, Docker data roots, and the
``<data_root>/<id>`` directories its state file lists: a Hadoop ``data_root`` elsewhere); plus any
namespace or cgroup named ``vnb<4 hex>-...`` / ``vnb<4 hex>`` of a dead run its state file names
(a name that only looks like ours, with no run's state behind it, is left alone); and whatever each
backend's ``clean_leftovers`` removes beyond that. An
engine's mounts live in its private mount namespace and vanish with its processes. A live
run's objects are never touched.

A lab kept by ``vnetbench up`` is a live run while its keeper process lives (the keeper is
its owner, see ``kept_lab``): ``clean`` leaves it alone and ``vnetbench down`` ends it. A lab
whose keeper was killed is a dead run and ``clean`` removes it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from vnetbench.backends.registry import all_backends
from vnetbench.host.cgroups import kill_tree, leftover_cgroups, pids_in_tree, remove_tree
from vnetbench.host.cleaned import CleanResult
from vnetbench.host.netns import NETNS_DIR
from vnetbench.host.state import DISK_WORK_ROOT, RunState, all_states, allocation_lock, process_alive
from vnetbench.host.teardown import (
    delete_namespaces,
    kill_namespace_processes,
    remove_run_files,
)

RUN_NAME = re.compile(r"^vnb([0-9a-f]{4})(-|$)")


def clean(only: set[str] | None = None) -> CleanResult:
    """Remove leftovers of dead runs (of the runs ``only`` names, when given: ``vnetbench
    down`` after a keeper that did not finish): a line per thing removed, and per thing that
    could not be (its run's state file is then kept, so a later ``clean`` tries again).

    This host's objects are removed under the allocation lock; the backends' own leftovers
    (machines over SSH, Kubernetes namespaces: minutes when a machine does not answer) are
    removed without it, so new runs do not wait on the network; the dead runs' state files,
    which keep their ids taken meanwhile, go last, under the lock again."""
    result = CleanResult()
    with allocation_lock():
        states = all_states()
        live = {s.short_id for s in states if s.owner_alive()}
        recorded = {s.short_id for s in states}

        def dead(run_id: str) -> bool:
            return run_id not in live and (only is None or run_id in only)

        def ours(run_id: str) -> bool:
            """A dead run's object by its mark: a state file records the run (a name that
            merely looks like ours, ``ip netns add vnbcafe-user``, is someone else's)."""
            return run_id in recorded and dead(run_id)

        gone = [state for state in states if dead(state.short_id)]
        kept: set[str] = set()
        for state in gone:
            for pid, start in state.processes:
                if process_alive(pid, start):
                    with suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                        result.done.append(f"killed process {pid} of run {state.short_id}")
            mine = _remove_namespaces(state.namespaces)
            result.add(mine)
            if mine.failed:
                kept.add(state.short_id)
            result.done += _remove_data_dirs(state)
        _remove_orphans(result, ours, dead)
    for state in gone:
        for backend in all_backends():
            theirs = backend.clean_leftovers(state)
            result.add(theirs)
            if theirs.failed:
                kept.add(state.short_id)
    with allocation_lock():
        for state in gone:
            if state.short_id in kept:
                result.failed.append(f"kept the state of run {state.short_id}: run `vnetbench "
                                     "clean` again once what is named above can be reached")
                continue
            remove_run_files(state)
            result.done.append(f"removed state of run {state.short_id}")
    from vnetbench.host import holds
    from vnetbench.run.platform import HOLD, restore_governors

    result.done += restore_governors(holds.orphaned(HOLD))  # every run holding it was killed
    return result


def _remove_orphans(result: CleanResult, ours: Callable[[str], bool],
                    dead: Callable[[str], bool]) -> None:
    """Namespaces, cgroups, data directories and WireGuard sockets named after a dead run."""
    orphans = [p.name for p in NETNS_DIR.iterdir()] if NETNS_DIR.is_dir() else []
    orphans = [n for n in orphans if (m := RUN_NAME.match(n)) and ours(m.group(1))]
    result.add(_remove_namespaces(orphans))
    for path in leftover_cgroups():
        match = RUN_NAME.match(path.name)
        if match and ours(match.group(1)):
            for pid in pids_in_tree(path):
                result.done.append(f"killed process {pid} left in {path}")
            kill_tree(path)
            remove_tree(path)
            if path.exists():
                result.failed.append(f"cgroup {path} could not be removed")
            else:
                result.done.append(f"removed cgroup {path}")
    if DISK_WORK_ROOT.is_dir():
        for run_dir in DISK_WORK_ROOT.iterdir():
            if re.fullmatch(r"[0-9a-f]{4}", run_dir.name) and dead(run_dir.name):
                shutil.rmtree(run_dir, ignore_errors=True)
                result.done.append(f"removed {run_dir}")
    for sock in Path("/var/run/wireguard").glob("vnb*"):
        match = RUN_NAME.match(sock.name[:8] + "-")
        if match and dead(match.group(1)):
            with suppress(OSError):
                sock.unlink()
                result.done.append(f"removed {sock}")


def _remove_data_dirs(state: RunState) -> list[str]:
    """Remove the directories the dead run recorded as made for it (Hadoop's data_root/<id>),
    only those named after the run; a line per directory removed."""
    done = []
    for path in state.data_dirs:
        if state.owns_data_dir(path) and os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
            if not os.path.exists(path):
                done.append(f"removed {path} of run {state.short_id}")
    return done


def _remove_namespaces(names: list[str]) -> CleanResult:
    present = [n for n in names if (NETNS_DIR / n).exists()]
    if not present:
        return CleanResult()
    killed = kill_namespace_processes(present)  # each survivor of SIGTERM got SIGKILL
    failed = delete_namespaces(present)
    done = [f"removed namespace {n}" for n in present if not (NETNS_DIR / n).exists()]
    return CleanResult(done + killed, failed)
