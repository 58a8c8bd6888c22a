"""The JSON-object lines of a program's output (the probe's events, the MPI bench's result,
a ``command`` workload's metrics): every line that parses as a JSON object, in order; other
lines (a tool's stray stderr, banners) are passed over."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """The lines of ``text`` that are JSON objects, parsed, in order."""
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            yield data
