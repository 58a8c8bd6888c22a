"""Cleaning real machines after a killed run: ``vnetbench clean --host`` (and ``vnetbench
clean`` for the machines a dead run's state file names).

Every lab on machines writes its teardown script to each machine before it builds anything
(``remote.scripts``); cleaning a machine runs every such script left there (those of one
run, when the run is known). A script removes only what its run made, and does nothing on
a machine that does not hold its recorded underlay address.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from vnetbench.errors import LabError, UnsupportedError
from vnetbench.remote.scripts import remote_dir
from vnetbench.remote.ssh import MachineSpec, SshConnection

CLEAN_TIMEOUT_S = 120.0


def clean_hosts(targets: Sequence[str], identity: str | None = None) -> list[str]:
    """``vnetbench clean --host``: every killed run's leftovers on these machines."""
    return clean_machines([MachineSpec(ssh=t, underlay="-", identity=identity)
                           for t in targets])


def clean_machines(specs: Sequence[MachineSpec], only: str | None = None) -> list[str]:
    """Run the teardown scripts left on each machine (of run ``only``, a ``vnb<id>``
    prefix, when given); a line per run cleaned, or the problem."""
    control = Path(tempfile.mkdtemp(prefix="vnb-ssh-"))
    try:
        return [line for spec in specs for line in clean_machine(spec, control, only)]
    finally:
        shutil.rmtree(control, ignore_errors=True)


def live_runs() -> set[str]:
    """Prefixes (``vnb<id>``) of this host's runs that are still going: never cleaned."""
    from vnetbench.state import all_states
    return {f"vnb{s.short_id}" for s in all_states() if s.owner_alive()}


def clean_machine(spec: MachineSpec, control_dir: Path, only: str | None = None) -> list[str]:
    """Run the teardown scripts of killed runs left on a machine (of run ``only``, a
    ``vnb<id>`` prefix, when given; never those of a run still going here); a line per run
    cleaned, or the problem."""
    conn = SshConnection(spec, control_dir)
    try:
        conn.open()
    except (UnsupportedError, LabError) as exc:
        return [f"host {spec.ssh}: not cleaned: {exc}"]
    try:
        pattern = f"{remote_dir(only or 'vnb*')}/teardown-h*.sh"
        listed = conn.run(["sh", "-c", f"ls -1 {pattern} 2>/dev/null; true"], check=False,
                          timeout=CLEAN_TIMEOUT_S)
        live = live_runs()
        scripts = [p for p in listed.stdout.split() if Path(p).parent.name not in live]
        done: list[str] = []
        for script in scripts:
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
