"""What a clean-up did: a line per thing removed, and a line per thing it could not remove.

Shared by ``vnetbench clean`` (this host's leftovers, ``cli.clean``), the backends' own
leftovers (``Backend.clean_leftovers``: machines over SSH, Kubernetes namespaces) and
``clean --host``/``--kubernetes``: anything in ``failed`` makes the command exit 1 and keeps
the record of what is left (the run's state file), so a later ``clean`` tries again.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CleanResult:
    """Lines of what was removed (``done``) and of what could not be (``failed``: an
    unreachable machine, a namespace that would not go): it may still hold a run's lab."""

    done: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return self.done + self.failed

    def add(self, other: CleanResult) -> None:
        self.done += other.done
        self.failed += other.failed
