"""Cleaning real machines after a killed run: ``vnetbench clean --host`` (and ``vnetbench
clean`` for the machines a dead run's state file names).

Every lab on machines writes its teardown script to each machine before it builds anything
(``remote.scripts``); cleaning a machine runs every such script left there (those of one
run, when the run is known). A script removes only what its run made, and does nothing on
a machine that does not hold its recorded underlay address.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from vnetbench.backends.machines.scripts import CONTROLLER, remote_dir
from vnetbench.backends.machines.ssh import SshConnection, destination_problem, trusted_root
from vnetbench.errors import LabError, UnsupportedError, VnetbenchError
from vnetbench.host.cleaned import CleanResult
from vnetbench.host.identity import controller_mark
from vnetbench.lab.spec import MachineSpec

CLEAN_TIMEOUT_S = 120.0


def clean_hosts(targets: Sequence[str], identity: str | None = None,
                any_controller: bool = False) -> CleanResult:
    """``vnetbench clean --host``: every killed run's leftovers on these machines. A target
    ssh would refuse, or an identity that is not a file, is bad input (VnetbenchError, one
    line) said before any machine is reached."""
    for target in targets:
        problem = destination_problem(target)
        if problem:
            raise VnetbenchError(f"--host: {problem}")
    if identity is not None and not os.path.isfile(os.path.expanduser(identity)):
        raise VnetbenchError(f"--identity {identity}: no such file; give the path of a private "
                             "key file")
    return clean_machines([MachineSpec(ssh=t, underlay="-", identity=identity)
                           for t in targets], any_controller=any_controller)


def clean_machines(specs: Sequence[MachineSpec], only: str | None = None,
                   any_controller: bool = False) -> CleanResult:
    """Run the teardown scripts left on each machine (of run ``only``, a ``vnb<id>``
    prefix, when given): what was cleaned, and the machines that could not be."""
    control = Path(tempfile.mkdtemp(prefix="vnb-ssh-"))
    result = CleanResult()
    try:
        for spec in specs:
            try:
                result.done += clean_machine(spec, control, only, any_controller)
            except (UnsupportedError, LabError) as exc:
                result.failed.append(f"host {spec.ssh}: not cleaned: {exc}")
        return result
    finally:
        shutil.rmtree(control, ignore_errors=True)


def live_runs() -> set[str]:
    """Prefixes (``vnb<id>``) of this host's runs that are still going: never cleaned."""
    from vnetbench.host.state import all_states
    return {f"vnb{s.short_id}" for s in all_states() if s.owner_alive()}


def clean_machine(spec: MachineSpec, control_dir: Path, only: str | None = None,
                  any_controller: bool = False) -> list[str]:
    """Run the teardown scripts of killed runs left on a machine (of run ``only``, a
    ``vnb<id>`` prefix, when given; never those of a run still going here, nor, unless
    ``any_controller``, those another machine started: it may still be running them); a
    line per run cleaned or left. UnsupportedError or LabError when the machine cannot be
    reached."""
    conn = SshConnection(spec, control_dir)
    conn.open()
    try:
        pattern = f"{remote_dir(only or 'vnb*')}/teardown-h*.sh"
        checked = conn.run(["sh", "-c", "\n".join(trusted_root(make=False))], check=False,
                           timeout=CLEAN_TIMEOUT_S)
        if checked.returncode != 0:  # its scripts could be anyone's: run none of them
            raise LabError(checked.stderr.strip() or "the work root is not vnetbench's")
        listed = conn.run(["sh", "-c", f"ls -1 {pattern} 2>/dev/null; true"], check=False,
                          timeout=CLEAN_TIMEOUT_S)
        live = live_runs()
        scripts = [p for p in listed.stdout.split() if Path(p).parent.name not in live]
        done: list[str] = []
        me = controller_mark()
        for script in scripts:
            run = Path(script).parent
            owner = conn.run(["sh", "-c", f"cat {run}/{CONTROLLER} 2>/dev/null; true"],
                             check=False, timeout=CLEAN_TIMEOUT_S).stdout.strip()
            if owner and owner != me and not any_controller:
                line = (f"host {spec.ssh}: left run {run.name}: started from {owner.split()[0]}"
                        ", which may still be running it (clean it there, or give "
                        "--any-controller once that machine is gone)")
                if line not in done:
                    done.append(line)
                continue
            got = conn.run(["sh", script], check=False, timeout=CLEAN_TIMEOUT_S)
            if "nothing to remove" in got.stdout:
                continue  # another machine's (machines sharing a disk)
            done.append(f"host {spec.ssh}: removed what run {Path(script).parent.name} left "
                        f"({Path(script).stem.removeprefix('teardown-')})")
            done += [f"host {spec.ssh}: {line}" for line in got.stderr.splitlines()
                     if line.strip()]
        return done
    finally:
        conn.close()
