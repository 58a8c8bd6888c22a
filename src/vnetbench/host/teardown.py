"""Removing a run's kernel state from this host: processes inside its namespaces, the
namespaces themselves (which takes every link, route, rule and qdisc in them) and its files.

Used by the lab's teardown and by ``vnetbench clean`` for runs that were killed.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

from vnetbench.host.netns import delete_netns, netns_inode, pids_in_netns
from vnetbench.host.processes import STOP_GRACE
from vnetbench.host.state import RunState, process_alive


def kill_namespace_processes(namespaces: Sequence[str]) -> list[str]:
    """SIGTERM (then SIGKILL) every process inside ``namespaces``; a problem per survivor of
    the SIGTERM."""
    inodes = {ino for ns in namespaces if (ino := netns_inode(ns)) is not None}
    if not inodes:
        return []
    pids = pids_in_netns(inodes)
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if process_alive(p)]
        time.sleep(0.02)
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return [f"process {p} was still running inside the lab at teardown" for p in pids]


def delete_namespaces(namespaces: Sequence[str]) -> list[str]:
    """Delete the named namespaces in this process (``netns.delete_netns``, as ``ip netns
    del`` does); a problem per one left."""
    problems = []
    for ns in namespaces:
        try:
            delete_netns(ns)
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"namespace {ns} could not be deleted: {exc.strerror or exc}")
    return problems


def remove_run_files(state: RunState) -> None:
    """The run's WireGuard sockets, work directory, recorded data directories and state file."""
    for sock in Path("/var/run/wireguard").glob(f"vnb{state.short_id}*"):
        with suppress(OSError):
            sock.unlink()
    if state.work_dir:
        for path in sorted(Path(state.work_dir).glob("**/*"), reverse=True):
            with suppress(OSError):
                path.rmdir() if path.is_dir() else path.unlink()
        with suppress(OSError):
            Path(state.work_dir).rmdir()
    for data_dir in state.data_dirs:  # e.g. Hadoop's data_root/<run id>, if its cleanup failed
        if state.owns_data_dir(data_dir):
            shutil.rmtree(data_dir, ignore_errors=True)
    with suppress(FileNotFoundError):
        state.path.unlink()
