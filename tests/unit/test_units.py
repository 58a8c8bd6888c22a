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
