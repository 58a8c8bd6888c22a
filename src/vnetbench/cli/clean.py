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
from contextlib import suppress
from pathlib import Path

from vnetbench.backends.registry import all_backends
from vnetbench.host.cgroups import kill_tree, leftover_cgroups, pids_in_tree, remove_tree
from vnetbench.host.netns import NETNS_DIR
from vnetbench.host.state import DISK_WORK_ROOT, RunState, all_states, allocation_lock, process_alive
from vnetbench.host.teardown import (
    delete_namespaces,
    kill_namespace_processes,
    remove_run_files,
)

RUN_NAME = re.compile(r"^vnb([0-9a-f]{4})(-|$)")


def clean(only: set[str] | None = None) -> list[str]:
    """Remove leftovers of dead runs (of the runs ``only`` names, when given: ``vnetbench
    down`` after a keeper that did not finish); returns a line per thing removed."""
    done: list[str] = []
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

        for state in states:
            if not dead(state.short_id):
                continue
            for pid, start in state.processes:
                if process_alive(pid, start):
                    with suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                        done.append(f"killed process {pid} of run {state.short_id}")
            done += _remove_namespaces(state.namespaces)
            done += _remove_data_dirs(state)
            for backend in all_backends():
                done += backend.clean_leftovers(state)
            remove_run_files(state)
            done.append(f"removed state of run {state.short_id}")
        orphans = [p.name for p in NETNS_DIR.iterdir()] if NETNS_DIR.is_dir() else []
        orphans = [n for n in orphans if (m := RUN_NAME.match(n)) and ours(m.group(1))]
        done += _remove_namespaces(orphans)
        for path in leftover_cgroups():
            match = RUN_NAME.match(path.name)
            if match and ours(match.group(1)):
                for pid in pids_in_tree(path):
                    done.append(f"killed process {pid} left in {path}")
                kill_tree(path)
                remove_tree(path)
                if not path.exists():
                    done.append(f"removed cgroup {path}")
        if DISK_WORK_ROOT.is_dir():
            for run_dir in DISK_WORK_ROOT.iterdir():
                if re.fullmatch(r"[0-9a-f]{4}", run_dir.name) and dead(run_dir.name):
                    shutil.rmtree(run_dir, ignore_errors=True)
                    done.append(f"removed {run_dir}")
        for sock in Path("/var/run/wireguard").glob("vnb*"):
            match = RUN_NAME.match(sock.name[:8] + "-")
            if match and dead(match.group(1)):
                with suppress(OSError):
                    sock.unlink()
                    done.append(f"removed {sock}")
    return done


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


def _remove_namespaces(names: list[str]) -> list[str]:
    present = [n for n in names if (NETNS_DIR / n).exists()]
    if not present:
        return []
    problems = kill_namespace_processes(present)
    problems += delete_namespaces(present)
    return [f"removed namespace {n}" for n in present] + problems
