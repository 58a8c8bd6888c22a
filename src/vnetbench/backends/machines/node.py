"""A node on a real machine: a namespace there (``vnb<id>-n<j>``), or the machine's own
namespace (the ``host`` layer), driven over the machine's SSH connection.

``run`` waits for a command as ``ssh ... ip netns exec NS argv``. ``spawn`` starts a
long-lived one through a forced terminal (``ssh -tt``): when the run stops the local ssh by
its PID, the machine's sshd hangs the terminal up and the process gets SIGHUP; its PID is
also written to the run's ``pids-h<i>`` there, which the machine's teardown script kills
(after a killed run too). A program vnetbench deployed (the probe) is called by its path on
the machine; a system program by its name (the machine's PATH finds it). The node's network
stack is not on this kernel: ``netns`` is ``None`` and its ``/proc/net`` is read over SSH.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from vnetbench.backends.machines.scripts import record_pid
from vnetbench.backends.machines.ssh import SshConnection
from vnetbench.backends.netns.node import communicate
from vnetbench.errors import LabError
from vnetbench.host.node import Node
from vnetbench.host.processes import ProcessTracker

LOOK_TIMEOUT_S = 10.0


def machine_argv(argv: Sequence[str], programs: Mapping[str, str]) -> list[str]:
    """``argv`` as the machine runs it: a deployed program by its path there, any other
    absolute path by its name."""
    first = argv[0]
    if first in programs:
        first = programs[first]
    elif first.startswith("/"):
        first = first.rsplit("/", 1)[1]
    return [first, *argv[1:]]


@dataclass(eq=False)
class MachineNode(Node):
    """A node whose processes run on a real machine (see the module docstring)."""

    conn: SshConnection | None = field(default=None, repr=False)
    tracker: ProcessTracker | None = field(default=None, repr=False)
    machine_netns: str | None = None
    """The node's namespace on the machine (``None``: the machine's own)."""
    pid_file: str = ""
    remote_dir: str = ""
    """The run's directory on the machine."""
    programs: Mapping[str, str] = field(default_factory=dict, repr=False)
    machine: str = ""
    """The machine's SSH destination (for messages and labels)."""
    shares_host_files: ClassVar[bool] = False

    def _conn(self) -> SshConnection:
        if self.conn is None:
            raise LabError(f"node {self.name} has no connection to its machine")
        return self.conn

    def _remote(self, argv: Sequence[str], env: Mapping[str, str] | None) -> list[str]:
        inner = ["ip", "netns", "exec", self.machine_netns] if self.machine_netns else []
        envs = ["env", *(f"{k}={v}" for k, v in env.items())] if env else []
        return [*inner, *envs, *machine_argv(argv, self.programs)]

    def run(self, argv: Sequence[str], timeout: float = 60.0, check: bool = True,
            env: Mapping[str, str] | None = None,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        local = self._conn().argv(self._remote(argv, env))
        proc = subprocess.Popen(
            local, stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        return communicate(proc, argv, timeout, check, input_text,
                           f"node {self.name} ({self.machine})")

    def spawn(self, argv: Sequence[str], log: Path | None = None,
              env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        if self.tracker is None:
            raise LabError(f"node {self.name} belongs to no lab: nothing would stop the process")
        record = f"{record_pid('$$', self.pid_file)}; exec \"$@\""
        local = self._conn().argv(["sh", "-c", record, "sh", *self._remote(argv, env)])
        local.insert(1, "-tt")  # a terminal: the process is hung up when the ssh is stopped
        return self.tracker.spawn(local, log=log, where=f"node {self.name} ({self.machine})")

    def work_dir(self, lab_dir: Path) -> Path:
        return Path(self.remote_dir) / "work"

    def check_files(self, needed_by: str) -> None:
        return None  # kept on the machine, over SSH

    def write_file(self, path: Path, text: str) -> None:
        self._conn().put_text(str(path), text, 0o644)

    def read_file(self, path: Path) -> str:
        got = self._conn().run(["cat", str(path)], check=False, timeout=LOOK_TIMEOUT_S)
        if got.returncode != 0:
            raise FileNotFoundError(f"{path} on {self.machine}")
        return got.stdout

    def remove_dir(self, path: Path) -> None:
        if str(path).startswith(self.remote_dir + "/"):  # only the run's own files
            self._conn().run(["rm", "-rf", str(path)], check=False, timeout=LOOK_TIMEOUT_S)

