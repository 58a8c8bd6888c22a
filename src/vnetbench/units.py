"""Units written by people in scenarios: durations, sizes, rates and percentages.

Each parser accepts a number (already in the base unit) or a string with a unit suffix and
returns the value in the base unit: seconds, bytes, bits per second, or a fraction (0..1).
The `Annotated` aliases at the bottom plug the parsers into pydantic models, so a scenario
key such as ``duration: 5s`` validates to ``5.0`` and ``duration: 5 parsecs`` fails with a
message that lists the units allowed.

Every value is finite, non-negative and at most a bound no experiment here gets near
(``MAX_DURATION_S``, ``MAX_SIZE_BYTES``, ``MAX_RATE_BPS``): ``.inf``, ``.nan`` or
``1e400`` are refused here rather than failing half-way through a run.

Rates are bits per second, in tc's bit units (case-insensitive): ``bit`` (or a bare
number), ``kbit``, ``mbit``, ``gbit``, ``tbit`` (SI, x1000) and ``kibit``, ``mibit``,
``gibit``, ``tibit`` (IEC, x1024). tc reads ``bps``, ``kbps``, ``mbps``, ``gbps`` as *bytes*
per second (``100MBps`` = 800 Mbit/s, ``100mbps`` too: tc ignores case), while most people
write ``Mbps`` for megabits: the same text means values 8x apart depending on who reads it.
Those units are therefore refused, with both readings spelled out in bits so the author picks
the one meant.
"""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import BeforeValidator

_NUMBER = r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)"

MAX_DURATION_S = 86_400.0
"""Longest duration a scenario may give (1 day; the probe refuses longer sessions too)."""
MAX_SIZE_BYTES = 2**50
"""Largest size a scenario may give (1 PiB)."""
MAX_RATE_BPS = 1e12
"""Highest rate a scenario may give (1 Tbit/s)."""

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1024, "kb": 1000, "kib": 1024,
    "m": 1024**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1024**3, "gb": 1000**3, "gib": 1024**3,
}
_RATE_UNITS = {
    "bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
    "kibit": 1024.0, "mibit": 1024.0**2, "gibit": 1024.0**3, "tibit": 1024.0**4,
}
_BYTE_RATE_UNITS = {
    "bps": 8.0, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
    "kibps": 8 * 1024.0, "mibps": 8 * 1024.0**2, "gibps": 8 * 1024.0**3, "tibps": 8 * 1024.0**4,
}
"""tc's byte-per-second units (refused: see the module docstring), as bits per second."""


_EXAMPLES = {"duration": "5s", "size": "64k", "rate": "100mbit"}


def _shown(value: object) -> str:
    """``value`` for a message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _split(text: str, what: str, units: dict[str, float] | dict[str, int]) -> tuple[float, str]:
    match = re.fullmatch(_NUMBER + r"\s*([a-zA-Z%]*)", text.strip())
    if not match:
        allowed = ", ".join(u for u in units if u)
        raise ValueError(f"{_shown(text)} is not a {what}; write a number with one of: {allowed}")
    return float(match.group(1)), match.group(2).lower()


def _number(value: int | float, what: str) -> float:
    """``value`` as a finite float (huge ints and inf/nan refused)."""
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"a {what} must be a finite number, not {_shown(value)}")
    return number


def _parse(value: object, what: str, units: dict[str, float] | dict[str, int],
           default_unit: str) -> float:
    """``value`` in the base unit: a plain number as is, else number x its unit's factor."""
    if isinstance(value, bool):
        raise ValueError(f"a {what} cannot be true/false")
    if isinstance(value, int | float):
        return _non_negative(_number(value, what), what)
    if not isinstance(value, str):
        raise ValueError(f"a {what} is a number or text such as {_EXAMPLES.get(what, '1')}, "
                         f"not {_shown(value)}")
    number, unit = _split(value, what, units)
    unit = unit or default_unit
    if unit not in units:
        raise ValueError(f"unknown {what} unit {unit!r} in {_shown(value)}; use one of: "
                         + ", ".join(u for u in units if u))
    return _number(number * units[unit], what)


def _at_most(value: float, limit: float, what: str, shown: str) -> float:
    if value > limit:
        raise ValueError(f"a {what} must be at most {shown}, got {value:g}")
    return value


def parse_duration(value: object) -> float:
    """Seconds from ``5``, ``5s``, ``250ms``, ``10us``, ``2m``; at most 1 day."""
    return _at_most(_parse(value, "duration", _DURATION_UNITS, "s"), MAX_DURATION_S,
                    "duration", "1 day (86400 s)")


def parse_size(value: object) -> int:
    """Bytes from ``512``, ``512M`` (MiB), ``100MB`` (10^6), ``1GiB``; at most 1 PiB."""
    return int(_at_most(_parse(value, "size", _SIZE_UNITS, ""), MAX_SIZE_BYTES, "size",
                        "1 PiB (2^50 bytes)"))


def parse_rate(value: object) -> float:
    """Bits per second from ``500mbit``, ``1gbit``, ``2mbit``, ``64kbit``, ``1mibit`` or a
    plain number (bits per second); at most 1 Tbit/s.

    tc's byte units (``bps``, ``kbps``, ``mbps``, ``gbps``, any case) are refused: tc reads
    ``100MBps`` and ``100mbps`` as 100 megabytes/s (800 Mbit/s), while ``100Mbps`` usually
    means 100 megabits/s; the message gives both readings in bits.
    """
    if isinstance(value, str):
        match = re.fullmatch(_NUMBER + r"\s*([a-zA-Z]+)", value.strip())
        if match and match.group(2).lower() in _BYTE_RATE_UNITS:
            number, unit = float(match.group(1)), match.group(2)
            as_bytes = number * _BYTE_RATE_UNITS[unit.lower()]
            as_bits = as_bytes / 8
            raise ValueError(
                f"{_shown(value)} is ambiguous: tc reads {unit!r} as bytes per second "
                f"({_fmt_rate(as_bytes)}), yet it is often meant as bits per second "
                f"({_fmt_rate(as_bits)}); write the rate in bits, e.g. "
                f"{_fmt_rate(as_bytes)} or {_fmt_rate(as_bits)}")
    return _at_most(_parse(value, "rate", _RATE_UNITS, "bit"), MAX_RATE_BPS, "rate",
                    "1 Tbit/s (1tbit)")


def _fmt_rate(bps: float) -> str:
    """``bps`` written with the largest SI bit unit that keeps it >= 1 (e.g. ``800mbit``)."""
    for unit, factor in (("tbit", 1e12), ("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bps >= factor:
            return f"{bps / factor:g}{unit}"
    return f"{bps:g}bit"


def parse_fraction(value: object) -> float:
    """A fraction 0..1 from ``0.5%`` (percent) or a plain number already in 0..1."""
    if isinstance(value, bool):
        raise ValueError("a percentage cannot be true/false")
    if isinstance(value, int | float):
        fraction = _number(value, "percentage")
    elif isinstance(value, str):
        text = value.strip()
        if not text.endswith("%"):
            raise ValueError(f"{_shown(value)} is not a percentage; write it like 0.5%")
        number, _ = _split(text[:-1], "percentage", {"%": 1})
        fraction = number / 100.0
    else:
        raise ValueError(f"{_shown(value)} is not a percentage; write it like 0.5%")
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"{_shown(value)} is outside 0%..100%")
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
