"""vnetbench's exceptions: every error a user can cause or meet says what to fix.

    VnetbenchError                 base; the CLI prints its message on one line, exits 2
    ├── ScenarioError              a scenario file is malformed (names file, key, allowed)
    ├── UnsupportedError           this host cannot do what was asked (e.g. ipvlan), and why
    ├── MissingToolError           a program vnetbench needs is not installed / not built
    ├── PermissionError_           not root
    ├── AddressError               the lab's address range collides with the host's routes
    ├── LabError                   building or using the lab failed (kernel said no)
    │   └── CommandError           a command inside the lab failed (argv, exit code, stderr)
    └── WorkloadError              a workload failed (its tool's output tail is attached)
"""

from __future__ import annotations

from collections.abc import Sequence


class VnetbenchError(Exception):
    """Base of every error vnetbench raises on purpose."""


class ScenarioError(VnetbenchError):
    """A scenario is malformed: the message names the file, the key and what is allowed."""


class UnsupportedError(VnetbenchError):
    """The host lacks a kernel feature or capability the request needs."""


class MissingToolError(VnetbenchError):
    """A required program is not installed or not built."""


class PermissionError_(VnetbenchError):
    """The operation needs root."""


class AddressError(VnetbenchError):
    """The address range the lab wants overlaps the host's routes or another run."""


class LabError(VnetbenchError):
    """Building, using or tearing down the lab failed."""


class CommandError(LabError):
    """A command run by the lab failed."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str, where: str = "") -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        tail = " | ".join(stderr.strip().splitlines()[-3:])
        place = f" in {where}" if where else ""
        super().__init__(f"`{' '.join(self.argv)}`{place} exited {returncode}: {tail}")


class WorkloadError(VnetbenchError):
    """A workload failed; the message carries the tool's output tail."""


class WorkloadSkipped(VnetbenchError):
    """A workload cannot run on this layer by design (e.g. the host's own stack has no route
    to an overlay's nodes, as on a real Docker host); the trial goes on without it."""
