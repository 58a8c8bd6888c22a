"""Units written by people in scenarios: durations, sizes, rates and percentages.

Each parser accepts a number (already in the base unit) or a string with a unit suffix and
returns the value in the base unit: seconds, bytes, bits per second, or a fraction (0..1).
The `Annotated` aliases at the bottom plug the parsers into pydantic models, so a scenario
key such as ``duration: 5s`` validates to ``5.0`` and ``duration: 5 parsecs`` fails with a
message that lists the units allowed.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator

_NUMBER = r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)"

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1024, "kb": 1000, "kib": 1024,
    "m": 1024**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1024**3, "gb": 1000**3, "gib": 1024**3,
}
_RATE_UNITS = {
    "bit": 1, "bps": 1, "kbit": 1e3, "kbps": 1e3, "mbit": 1e6, "mbps": 1e6,
    "gbit": 1e9, "gbps": 1e9,
}


def _split(text: str, what: str, units: dict[str, float] | dict[str, int]) -> tuple[float, str]:
    match = re.fullmatch(_NUMBER + r"\s*([a-zA-Z%]*)", text.strip())
    if not match:
        allowed = ", ".join(u for u in units if u)
        raise ValueError(f"{text!r} is not a {what}; write a number with one of: {allowed}")
    return float(match.group(1)), match.group(2).lower()


def _parse(value: object, what: str, units: dict[str, float] | dict[str, int],
           default_unit: str) -> float:
    """``value`` in the base unit: a plain number as is, else number x its unit's factor."""
    if isinstance(value, bool):
        raise ValueError(f"a {what} cannot be true/false")
    if isinstance(value, int | float):
        return _non_negative(float(value), what)
    number, unit = _split(str(value), what, units)
    unit = unit or default_unit
    if unit not in units:
        raise ValueError(f"unknown {what} unit {unit!r} in {value!r}; use one of: "
                         + ", ".join(u for u in units if u))
    return number * units[unit]


def parse_duration(value: object) -> float:
    """Seconds from ``5``, ``5s``, ``250ms``, ``10us``, ``2m``."""
    return _parse(value, "duration", _DURATION_UNITS, "s")


def parse_size(value: object) -> int:
    """Bytes from ``512``, ``512M`` (MiB), ``100MB`` (10^6), ``1GiB``."""
    return int(_parse(value, "size", _SIZE_UNITS, ""))


def parse_rate(value: object) -> float:
    """Bits per second from ``500mbit``, ``1gbit``, ``2mbit``, ``64kbit`` or a plain number."""
    return _parse(value, "rate", _RATE_UNITS, "bit")


def parse_fraction(value: object) -> float:
    """A fraction 0..1 from ``0.5%`` (percent) or a plain number already in 0..1."""
    if isinstance(value, bool):
        raise ValueError("a percentage cannot be true/false")
    if isinstance(value, int | float):
        fraction = float(value)
    else:
        text = str(value).strip()
        if not text.endswith("%"):
            raise ValueError(f"{value!r} is not a percentage; write it like 0.5%")
        number, _ = _split(text[:-1], "percentage", {"%": 1})
        fraction = number / 100.0
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"{value!r} is outside 0%..100%")
    return fraction


def _non_negative(value: float, what: str) -> float:
    if value < 0:
        raise ValueError(f"a {what} cannot be negative ({value})")
    return value


Duration = Annotated[float, BeforeValidator(parse_duration)]
"""Seconds; accepts ``5s``, ``250ms``."""
Size = Annotated[int, BeforeValidator(parse_size)]
"""Bytes; accepts ``512M``, ``100MB``."""
Rate = Annotated[float, BeforeValidator(parse_rate)]
"""Bits per second; accepts ``500mbit``."""
Fraction = Annotated[float, BeforeValidator(parse_fraction)]
"""0..1; accepts ``0.5%``."""
