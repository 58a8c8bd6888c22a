"""Counter files read in one shell command: the script that prints each file behind a marker
line, and its output split back into the files. Readers of machines a command costs a round
trip to (real machines over SSH, Kubernetes nodes through ``kubectl exec``) read every file
a snapshot needs at once with it."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

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
