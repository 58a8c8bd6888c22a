"""A node realised as a QEMU guest, or as a namespace inside one (a ``vmhost`` lab's node):
commands run inside it through the guest's exec agent.

``run`` and ``spawn`` start the host-side client (``client.py``) of the guest's agent, which
relays stdio, signals and the exit status, so a workload treats the guest's process like a
local one and the run stops it by the client's PID. The guest's network stack is its own
kernel's: ``netns`` is ``None``, and ``wait_listening`` reads the guest's ``/proc/net``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from vnetbench.backends.netns.node import communicate
from vnetbench.backends.vm.qemu import Guest
from vnetbench.errors import LabError
from vnetbench.host.node import Node
from vnetbench.host.processes import ProcessTracker

GUEST_WORK_DIR = Path("/var/tmp/vnetbench-work")
"""Where workloads keep a guest node's files (in the guest's own tmpfs root)."""
FILE_TIMEOUT_S = 60.0
"""Seconds a file operation in a guest may take (a command under TCG starts in ~0.5 s)."""


@dataclass(eq=False)
class GuestNode(Node):
    """A node whose processes run in a QEMU guest."""

    guest: Guest | None = field(default=None, repr=False)
    tracker: ProcessTracker | None = field(default=None, repr=False)
    inner_netns: str | None = None
    """The namespace inside the guest the node is (a VM host's namespace node), if any."""

    def _inside(self, argv: Sequence[str]) -> list[str]:
        prefix = ["ip", "netns", "exec", self.inner_netns] if self.inner_netns else []
        return [*prefix, *argv]

    def _guest(self) -> Guest:
        if self.guest is None:
            raise LabError(f"node {self.name} has no guest")
        return self.guest

    def run(self, argv: Sequence[str], timeout: float = 60.0, check: bool = True,
            env: Mapping[str, str] | None = None,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        host_argv = self._guest().exec_argv(self._inside(argv), env)
        proc = subprocess.Popen(
            host_argv, stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        return communicate(proc, argv, timeout, check, input_text, f"node {self.name} (vm)")

    def spawn(self, argv: Sequence[str], log: Path | None = None,
              env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        if self.tracker is None:
            raise LabError(f"node {self.name} belongs to no lab: nothing would stop the process")
        return self.tracker.spawn(self._guest().exec_argv(self._inside(argv), env), log=log,
                                  where=f"node {self.name} (vm)")

    listen_poll_s: ClassVar[float] = 0.1
    """Each look runs a command in the guest: look less often."""

    def work_dir(self, lab_dir: Path) -> Path:
        return GUEST_WORK_DIR

    def check_files(self, needed_by: str) -> None:
        return None  # kept in the guest, through its agent

    def write_file(self, path: Path, text: str) -> None:
        self.run(["sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1"', "sh", str(path)],
                 timeout=FILE_TIMEOUT_S, input_text=text)

    def read_file(self, path: Path) -> str:
        return self.cat_file(path, FILE_TIMEOUT_S, f"in node {self.name} (vm)")

    def remove_dir(self, path: Path) -> None:
        if len(path.parts) < 3 or not path.is_absolute():  # never a guest's / or /var
            raise LabError(f"refusing to remove {path} in node {self.name}: not a directory "
                           "a workload made")
        self.run(["rm", "-rf", str(path)], check=False, timeout=FILE_TIMEOUT_S)

