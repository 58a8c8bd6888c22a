"""The types of JSON (and YAML) data as vnetbench reads and writes it.

``JsonValue`` is any value ``json.loads`` (or ``yaml.safe_load`` of plain data) returns;
``JsonObject`` is one mapping of them, the shape of records, schemas and manifests.
"""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = "str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None"
"""One JSON value: a scalar, a list of values or an object of values."""

JsonObject: TypeAlias = "dict[str, JsonValue]"
"""One JSON object."""
