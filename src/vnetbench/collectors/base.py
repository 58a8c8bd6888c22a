"""Common ground of the collectors: the reader callable, the Snapshot and the Collector interface.

A collector reads kernel counters through a reader ``read(netns, path) -> str`` (the lab
supplies one that reads ``/proc/thread-self/net/...`` from inside a namespace; ``None`` is
the root namespace), so parsers can be tested on recorded text. ``snapshot()`` records the
counters now; ``delta(before, after, labels)`` turns two snapshots into Samples.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vnetbench.errors import UnsupportedError
from vnetbench.results.model import Sample

Reader = Callable[[str | None, str], str]
"""``read(netns, path)``: the text of a /proc or /sys file, in a namespace or the root one."""

ROOT_NETNS = "root"


def read_root(netns: str | None, path: str) -> str:
    """A reader for the root namespace only (enough for host-wide files and tests)."""
    if netns is not None:
        raise UnsupportedError(f"read_root cannot read {path} inside netns {netns!r}; "
                               "pass the lab's namespace-aware reader")
    return Path(path).read_text(encoding="utf-8")


def recorded_reader(files: Mapping[tuple[str | None, str], str]) -> Reader:
    """A reader answering from recorded text, keyed by (netns, path) (for tests and replays)."""
    def read(netns: str | None, path: str) -> str:
        try:
            return files[(netns, path)]
        except KeyError as exc:
            raise FileNotFoundError(f"no recorded {path} for netns {netns!r}") from exc
    return read


@dataclass(frozen=True)
class Snapshot:
    """Counters at one instant: ``counters[entity][name]`` (entity = cpu, device, section...)."""

    t_ns: int
    counters: dict[str, dict[str, int]] = field(default_factory=dict)


def counter_delta(before: int, after: int) -> int:
    """after - before; a counter that went backwards was reset, so count from zero."""
    return after - before if after >= before else after


def now_ns() -> int:
    return time.monotonic_ns()


class Collector(ABC):
    """Reads a family of kernel counters; subclasses implement snapshot and delta."""

    name: str = "collector"

    def __init__(self, read: Reader = read_root) -> None:
        self.read = read

    @abstractmethod
    def snapshot(self) -> Snapshot:
        """Counters now."""

    @abstractmethod
    def delta(self, before: Snapshot, after: Snapshot,
              labels: Mapping[str, str] | None = None) -> list[Sample]:
        """Samples for what happened between two snapshots, carrying ``labels``."""

    @staticmethod
    def elapsed_s(before: Snapshot, after: Snapshot) -> float:
        return max(0.0, (after.t_ns - before.t_ns) / 1e9)


class NamespacedCollector(Collector):
    """A collector of counters kept per network namespace (``namespaces``; None: the one this
    process is in), each snapshot keyed by the namespace (``ROOT_NETNS`` for None)."""

    def __init__(self, read: Reader = read_root, *,
                 namespaces: Sequence[str | None] = (None,)) -> None:
        super().__init__(read)
        self.namespaces = list(namespaces)

    @staticmethod
    def key(ns: str | None) -> str:
        return ns if ns is not None else ROOT_NETNS


def sample(metric: str, value: float, unit: str, labels: Mapping[str, str], t_ns: int,
           **extra: str) -> Sample:
    """Build a Sample with ``labels`` plus ``extra`` labels."""
    return Sample(metric, float(value), unit, {**labels, **extra}, t_ns)
