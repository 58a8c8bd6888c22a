"""A fake backend for unit tests: drives the runner, the CLI and the report pipeline end to
end without root, and records what it was asked to do.

Every layer's plan is computed as usual (``lab_plan.make_plan``) and recorded, but nothing
of it is applied: no namespace, link, rule or cgroup is made. The nodes are processes of
this machine in the caller's own network namespace, reached on loopback, so workloads run
their real programs (the probe) and real packets flow, on 127.0.0.1 only.

    with fake_backend(monkeypatch, tmp_path) as log:
        run_scenario(...)
    log.realised -> [(layer, node count, kernel plan text), ...]
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from vnetbench.backends import registry
from vnetbench.backends.base import Backend, LabContext
from vnetbench.backends.netns.node import NamespaceNode
from vnetbench.host.node import Node
from vnetbench.layers.base import Layer

LOOPBACK = "127.0.0.1"


@dataclass
class FakeLog:
    """What the fake backend was asked to do, in order."""

    checked: list[str] = field(default_factory=list)
    realised: list[tuple[str, int, str]] = field(default_factory=list)
    """(layer, nodes, the kernel plan it was handed, rendered)."""
    commands: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    """(node name, argv) of every run and spawn."""
    stopped: list[str] = field(default_factory=list)


LOG = FakeLog()


@dataclass(eq=False)
class FakeNode(NamespaceNode):
    """A node that is this machine (no namespace, no cgroup), reached on loopback."""

    def run(self, argv: Sequence[str], timeout: float = 60.0, check: bool = True,
            env: Mapping[str, str] | None = None,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        LOG.commands.append((self.name, tuple(argv)))
        return super().run(argv, timeout, check, env, input_text)

    def spawn(self, argv: Sequence[str], log: Path | None = None,
              env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        LOG.commands.append((self.name, tuple(argv)))
        return super().spawn(argv, log, env)


class FakeBackend(Backend):
    """Records the plan; makes loopback nodes."""

    name = "fake"
    needs_root = False

    @classmethod
    def check(cls, layer: Layer) -> None:
        LOG.checked.append(layer.name)

    def realise(self, lab: LabContext) -> list[Node]:
        plan = lab.plan
        LOG.realised.append((plan.layer.name, len(plan.placements), plan.kernel.render()))
        return [FakeNode(p.index, p.host, None, LOOPBACK, "lo", tracker=lab.tracker)
                for p in plan.placements]

    def facts(self) -> dict[str, Any]:
        return {"fake": {"applied": False}}

    def stop(self, lab: LabContext) -> list[str]:
        LOG.stopped.append(lab.plan.layer.name)
        return []


@contextmanager
def fake_backend(monkeypatch: pytest.MonkeyPatch, state_dir: Path) -> Iterator[FakeLog]:
    """Every namespace layer's nodes come from the fake backend; run state under
    ``state_dir`` (not /run); the log of what was asked."""
    import vnetbench.backends.lab
    import vnetbench.host.state

    global LOG
    LOG = FakeLog()
    monkeypatch.setitem(registry.BACKENDS, FakeBackend.name, FakeBackend)
    monkeypatch.setattr(Layer, "backend", FakeBackend.name)
    monkeypatch.setattr(vnetbench.host.state, "STATE_DIR", state_dir)
    monkeypatch.setattr(vnetbench.backends.lab, "WORK_ROOT", state_dir / "work")
    yield LOG
