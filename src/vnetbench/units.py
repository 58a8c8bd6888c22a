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
``gibit``, ``tibit`` (IEC, x1024). Bytes per second are accepted when written so that nobody
can read them as bits: a capital ``B`` and ``/s`` (``B/s``, ``kB/s``, ``MB/s``, ``GB/s``,
``TB/s``, ``KiB/s``, ``MiB/s``, ``GiB/s``, ``TiB/s``; ``100MB/s`` = 800 Mbit/s). tc reads
``bps``, ``kbps``, ``mbps``, ``gbps`` as *bytes* per second (``100MBps`` = 800 Mbit/s,
``100mbps`` too: tc ignores case), while most people write ``Mbps`` for megabits: the same
text means values 8x apart depending on who reads it. Those units, and ``Mb/s`` style ones
(bits to most readers, bytes to some), are therefore refused, with both readings spelled out
so the author picks the one meant; never silently taken as bits.
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

DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1024, "kb": 1000, "kib": 1024,
    "m": 1024**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1024**3, "gb": 1000**3, "gib": 1024**3,
}
RATE_UNITS = {
    "bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
    "kibit": 1024.0, "mibit": 1024.0**2, "gibit": 1024.0**3, "tibit": 1024.0**4,
}
_BYTE_RATE_UNITS = {
    "bps": 8.0, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
    "kibps": 8 * 1024.0, "mibps": 8 * 1024.0**2, "gibps": 8 * 1024.0**3, "tibps": 8 * 1024.0**4,
}
"""tc's byte-per-second units (refused: see the module docstring), as bits per second."""
BYTES_PER_SECOND = {
    "B/s": 8.0, "kB/s": 8e3, "KB/s": 8e3, "MB/s": 8e6, "GB/s": 8e9, "TB/s": 8e12,
    "KiB/s": 8 * 1024.0, "MiB/s": 8 * 1024.0**2, "GiB/s": 8 * 1024.0**3, "TiB/s": 8 * 1024.0**4,
}
"""Bytes per second written unambiguously (case-sensitive: a capital B), as bits per second."""


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
    return _at_most(_parse(value, "duration", DURATION_UNITS, "s"), MAX_DURATION_S,
                    "duration", "1 day (86400 s)")


def parse_size(value: object) -> int:
    """Bytes from ``512``, ``512M`` (MiB), ``100MB`` (10^6), ``1GiB``; at most 1 PiB."""
    return int(_at_most(_parse(value, "size", SIZE_UNITS, ""), MAX_SIZE_BYTES, "size",
                        "1 PiB (2^50 bytes)"))


def parse_rate(value: object) -> float:
    """Bits per second from ``500mbit``, ``1gbit``, ``2mbit``, ``64kbit``, ``1mibit``, a plain
    number (bits per second) or bytes per second written ``100MB/s`` (= 800 Mbit/s),
    ``10MiB/s``, ``1GB/s``; at most 1 Tbit/s.

    tc's byte units (``bps``, ``kbps``, ``mbps``, ``gbps``, any case) are refused: tc reads
    ``100MBps`` and ``100mbps`` as 100 megabytes/s (800 Mbit/s), while ``100Mbps`` usually
    means 100 megabits/s; the message gives both readings. So are ``/s`` units other than
    ``BYTES_PER_SECOND`` (``100Mb/s``: bits to most readers).
    """
    if isinstance(value, str):
        match = re.fullmatch(_NUMBER + r"\s*([a-zA-Z]+(/s)?)", value.strip())
        if match:
            number, unit = float(match.group(1)), match.group(2)
            if unit in BYTES_PER_SECOND:
                return _at_most(_number(number * BYTES_PER_SECOND[unit], "rate"),
                                MAX_RATE_BPS, "rate", "1 Tbit/s (1tbit or 125GB/s)")
            if unit.endswith("/s") and unit[:-2].lower() in RATE_UNITS:  # 100mbit/s
                value = f"{match.group(1)}{unit[:-2]}"
            elif unit.lower() in _BYTE_RATE_UNITS or unit.endswith("/s"):
                _refuse_byte_rate(value, number, unit)
    return _at_most(_parse(value, "rate", RATE_UNITS, "bit"), MAX_RATE_BPS, "rate",
                    "1 Tbit/s (1tbit or 125GB/s)")


def _refuse_byte_rate(value: str, number: float, unit: str) -> None:
    """ValueError for a rate whose unit some read as bits and others as bytes per second
    (``100MBps``, ``100Mb/s``), with both ways to write it plainly; or for an unknown
    ``/s`` unit."""
    prefix = unit.removesuffix("/s").lower().removesuffix("ps").removesuffix("b")
    if prefix + "bps" not in _BYTE_RATE_UNITS:
        raise ValueError(f"unknown rate unit {unit!r} in {_shown(value)}; write bits per "
                         "second (e.g. 100mbit) or bytes per second (e.g. 100MB/s)")
    as_bytes = number * _BYTE_RATE_UNITS[prefix + "bps"]
    reading = ("tc reads it as bytes per second" if not unit.endswith("/s") else
               "most read it as bits per second, some as bytes")
    raise ValueError(
        f"{_shown(value)} is ambiguous: {reading} ({format_rate(as_bytes)} if bytes); write "
        f"{number:g}{prefix}bit for bits per second or {number:g}{_byte_unit(prefix)} for "
        "bytes per second")


def _byte_unit(prefix: str) -> str:
    """The unambiguous bytes-per-second unit of an SI/IEC prefix (``m`` -> ``MB/s``)."""
    return {"": "B/s", "k": "kB/s", "ki": "KiB/s"}.get(prefix, prefix[:1].upper()
                                                        + prefix[1:] + "B/s")


def format_rate(bps: float) -> str:
    """``bps`` written with the largest SI bit unit that keeps it >= 1 (e.g. ``800mbit``)."""
    for unit, factor in (("tbit", 1e12), ("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bps >= factor:
            return f"{bps / factor:g}{unit}"
    return f"{bps:g}bit"


def format_duration(seconds: float) -> str:
    """``seconds`` as a scenario would write it: ``5s``, ``250ms``, ``10us``, ``30min``."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 3600:g}h" if seconds % 3600 == 0 else f"{seconds / 60:g}min"
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= factor:
            return f"{seconds / factor:g}{unit}"
    return f"{seconds / 1e-9:g}ns" if seconds else "0s"


def format_size(size: int) -> int | str:
    """``size`` bytes as a scenario would write it: ``64M`` (MiB), ``100MB`` (10^6), or the
    plain number when no unit divides it."""
    for unit, factor in (("G", 1024**3), ("GB", 1000**3), ("M", 1024**2), ("MB", 1000**2),
                         ("k", 1024), ("kB", 1000)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return size


def format_fraction(fraction: float) -> str:
    """A fraction 0..1 as a percentage (``0.005`` -> ``0.5%``)."""
    return f"{fraction * 100:g}%"


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
        number, junk = _split(text[:-1], "percentage", {"%": 1})
        if junk:
            raise ValueError(f"{_shown(value)} is not a percentage; write it like 0.5%")
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


def counted(number: object, word: str) -> str:
    """``1 host``, ``2 hosts``, ``1.5 nodes``: a count with its noun, plural unless it is 1."""
    text = f"{number:g}" if isinstance(number, float) else str(number)
    try:
        one = float(text) == 1.0
    except ValueError:
        one = False
    return f"{text} {word}" if one else f"{text} {word}s"
