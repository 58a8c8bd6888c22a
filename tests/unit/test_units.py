"""Unit parsing: durations, sizes, rates, percentages."""

from __future__ import annotations

import pytest

from vnetbench.units import parse_duration, parse_fraction, parse_rate, parse_size


@pytest.mark.parametrize(("text", "seconds"), [
    ("5s", 5.0), ("250ms", 0.25), ("10us", 1e-5), ("2m", 120.0), (3, 3.0), ("1.5", 1.5)])
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(("text", "size"), [
    ("512M", 512 * 2**20), ("100MB", 100_000_000), ("1GiB", 2**30), (4096, 4096), ("64k", 65536)])
def test_sizes(text: object, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(("text", "bps"), [("500mbit", 500e6), ("1gbit", 1e9), ("64kbit", 64e3)])
def test_rates(text: str, bps: float) -> None:
    assert parse_rate(text) == bps


def test_fractions() -> None:
    assert parse_fraction("0.5%") == pytest.approx(0.005)
    assert parse_fraction(0.25) == 0.25
    with pytest.raises(ValueError, match="percentage"):
        parse_fraction("5")
    with pytest.raises(ValueError, match="outside"):
        parse_fraction("101%")


@pytest.mark.parametrize("bad", ["fast", "10 parsecs", "-5s", True])
def test_bad_durations(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


# One table of rates as people write them: tc's bit units, unambiguous bytes per second
# (capital B and /s), and the spellings that mean bits to some and bytes to others (refused,
# never silently taken as bits). None: refused.
RATE_TABLE: list[tuple[str, float | None]] = [
    ("100mbit", 100e6), ("100Mbit", 100e6), ("100 mbit", 100e6), ("100mbit/s", 100e6),
    ("1gbit", 1e9), ("64kbit", 64e3), ("2mibit", 2 * 1024.0**2), ("1000", 1000.0),
    ("100MB/s", 800e6), ("100 MB/s", 800e6), ("1GB/s", 8e9), ("100kB/s", 800e3),
    ("100KB/s", 800e3), ("5B/s", 40.0), ("100MiB/s", 100 * 1024.0**2 * 8),
    ("1KiB/s", 8192.0), ("125GB/s", 1e12),
    ("100MBps", None), ("100mbps", None), ("100Mbps", None), ("1kbps", None), ("1bps", None),
    ("100Mb/s", None), ("100mb/s", None), ("100mB/s", None), ("200GB/s", None),
    ("100 parsecs/s", None), ("100MB", None),
]


@pytest.mark.parametrize(("text", "bps"), RATE_TABLE, ids=[t for t, _ in RATE_TABLE])
def test_rate_table_bits_and_bytes(text: str, bps: float | None) -> None:
    if bps is None:
        with pytest.raises(ValueError) as info:
            parse_rate(text)
        assert str(info.value) and "\n" not in str(info.value)
    else:
        assert parse_rate(text) == pytest.approx(bps)


@pytest.mark.parametrize("text", ["100MBps", "100Mb/s"])
def test_ambiguous_rates_name_both_plain_spellings(text: str) -> None:
    with pytest.raises(ValueError, match="ambiguous") as info:
        parse_rate(text)
    assert "100mbit for bits per second" in str(info.value)
    assert "100MB/s for bytes per second" in str(info.value)


def test_a_percentage_with_a_unit_in_it_is_refused() -> None:
    with pytest.raises(ValueError, match="percentage"):
        parse_fraction("5kb%")
