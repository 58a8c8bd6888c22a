"""The contract between the runner and a workload.

A workload is built from its validated options (a pydantic model), then for each trial:
``prepare(lab)`` starts what it needs inside the lab's nodes (servers), ``run(lab, raw_dir)``
measures and returns samples (keeping each tool's raw output under ``raw_dir``), and
``cleanup(lab)`` stops what ``prepare`` started. Processes started with ``node.spawn`` are
also stopped by the lab's teardown, so a failing workload leaves nothing behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel

if TYPE_CHECKING:
    from vnetbench.backends.lab import Lab
    from vnetbench.results.model import Sample


class Workload(Protocol):
    """What the runner drives."""

    name: str

    def prepare(self, lab: Lab) -> None: ...

    def run(self, lab: Lab, raw_dir: Path) -> list[Sample]: ...

    def cleanup(self, lab: Lab) -> None: ...


class WorkloadSpec(Protocol):
    """A registry entry: the options model and how to make the workload from options."""

    options: type[BaseModel]

    def create(self, options: BaseModel) -> Workload: ...
