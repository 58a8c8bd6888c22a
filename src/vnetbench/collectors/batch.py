"""Counter files read in one shell command: the script that prints each file behind a marker
line, and its output split back into the files. Readers of machines a command costs a round
trip to (real machines over SSH, Kubernetes nodes through ``kubectl exec``) read every file
a snapshot needs at once with it, and a read answers from that batch (``BatchedReader``)."""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from collections.abc import Sequence

FileKey = tuple[str | None, str]
"""A file a reader reads: (the namespace it is read in, None for the reader's own; path)."""

MARK = "@@file"
MISSING = "@@missing"
"""Printed where a file could not be read."""


def cat_script(files: Sequence[tuple[str, str]]) -> str:
    """A POSIX shell script printing each file (``prefix``: a command to read it through, as
    ``ip netns exec X ``; ``path``) behind its marker line, ``MISSING`` where it cannot."""
    return "".join(f"echo '{MARK} {k}'; {prefix}cat {shlex.quote(path)} 2>/dev/null || "
                   f"echo '{MISSING}'\n" for k, (prefix, path) in enumerate(files))


def split_files(output: str, count: int) -> list[str | None]:
    """``cat_script``'s output of ``count`` files: each file's text, None where it was
    missing or the output stops before it."""
    texts: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines(keepends=True):
        if line.startswith(f"{MARK} "):
            current = texts.setdefault(int(line.split()[1]), [])
        elif current is not None:
            current.append(line)
    out: list[str | None] = []
    for k in range(count):
        text = "".join(texts.get(k, [MISSING]))
        out.append(None if text.strip() == MISSING else text)
    return out


class BatchedReader(ABC):
    """``read(netns, path)`` (``netns`` None: the reader's own namespace) where a command
    costs a round trip: every file read once is ``known``, read again with the others in one
    command by the subclass's ``refresh`` into ``batch``; a read answers from that batch
    (each file taken once), else with ``read_one``; FileNotFoundError (``missing``) where
    the file cannot be read."""

    known: list[FileKey]
    batch: dict[FileKey, str | None]

    @abstractmethod
    def refresh(self) -> None:
        """Read every ``known`` file again, at once, into ``batch``."""

    @abstractmethod
    def read_one(self, netns: str | None, path: str) -> str | None:
        """One file on its own (None: it cannot be read)."""

    @abstractmethod
    def missing(self, netns: str | None, path: str) -> str:
        """What FileNotFoundError says of a file that cannot be read."""

    def __call__(self, netns: str | None, path: str) -> str:
        key = (netns, path)
        if key in self.batch:
            text = self.batch.pop(key)
        else:
            if key not in self.known:
                self.known.append(key)
            text = self.read_one(netns, path)
        if text is None:
            raise FileNotFoundError(self.missing(netns, path))
        return text
