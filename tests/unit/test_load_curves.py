"""Latency against offered load (results/load.py, report/load.py): the knee rule, curves
from an open-loop rr's samples, the ratios to the baseline with intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vnetbench.report.figures.sweep import follows_axis, sweep_curves
from vnetbench.report.load import render_load
from vnetbench.results.load import (
    by_layer,
    capacities_found,
    config_of,
    knee_of,
    knee_point,
    load_curves,
    load_ratios,
    rate_of,
)
from vnetbench.results.model import Sample


def test_the_knee_is_where_the_p99_first_doubles_log_interpolated() -> None:
    assert knee_of([1000, 2000, 4000], [20, 30, 80]) == pytest.approx(
        2000 + (math.log(40) - math.log(30)) / (math.log(80) - math.log(30)) * 2000)
    assert knee_of([1000, 2000], [20, 40]) == 2000  # exactly twice at the second rate
    assert knee_of([1000, 2000, 4000], [20, 25, 39]) is None  # never doubles: beyond
    assert knee_of([1000], [20]) is None
    # a lowest load's p99 lifted by one slow wake-up: the knee doubles the lowest p99 below
    assert knee_of([1000, 2000, 4000, 8000], [90, 20, 30, 80]) == pytest.approx(
        4000 + (math.log(40) - math.log(30)) / (math.log(80) - math.log(30)) * 4000)
    assert rate_of("2000/s") == 2000 and rate_of("closed") is None


def _samples(layer: str, p99_at: dict[float, float], tps_cap: float, reps: int = 6,
             seed: int = 1) -> list[Sample]:
    rng = np.random.default_rng(seed)
    out = []
    for rate, p99 in p99_at.items():
        for r in range(reps):
            labels = {"layer": layer, "workload": "rr", "offered": f"{rate:g}/s",
                      "repetition": str(r), "nodes": "2", "hosts": "2", "loop": "open"}
            noise = float(rng.normal(1.0, 0.03))
            out += [Sample("rtt_p99_us", p99 * noise, "us", dict(labels)),
                    Sample("rtt_p50_us", p99 * noise / 2, "us", dict(labels)),
                    Sample("tps", min(rate, tps_cap) * noise, "1/s", dict(labels)),
                    Sample("behind", float(rate > tps_cap), "flag", dict(labels))]
    return out


def test_curves_knees_capacities_and_their_ratios_to_the_baseline() -> None:
    rates = [1000.0, 5000.0, 10000.0, 20000.0, 40000.0]
    host = _samples("host", dict(zip(rates, [20, 21, 23, 30, 200], strict=True)), 30000)
    slow = _samples("userspace", dict(zip(rates, [80, 100, 400, 3000, 9000], strict=True)),
                    9000, seed=2)
    curves = {c.layer: c for c in load_curves([*host, *slow])}
    assert set(curves) == {"host", "userspace"}
    assert [p.offered for p in curves["host"].points] == rates
    assert curves["host"].knee is not None and 20000 < curves["host"].knee < 40000
    assert curves["userspace"].knee is not None and 5000 < curves["userspace"].knee < 10000
    assert curves["userspace"].points[-1].behind_share == 1.0
    assert curves["host"].capacity == pytest.approx(30000, rel=0.1)
    (rows,) = load_ratios([*host, *slow]).values()
    ratios = by_layer(rows)["userspace"]
    knee = ratios["knee"]
    assert knee.ratio is not None and knee.low is not None and knee.high is not None
    assert knee.low <= knee.ratio <= knee.high < 0.5  # well below the host's
    cap = ratios["capacity"]
    assert cap.ratio == pytest.approx(0.3, rel=0.1)
    html = render_load([*host, *slow])
    assert "Latency under load" in html and "userspace" in html and "behind" in html


def test_a_curve_that_never_doubles_has_its_knee_beyond_and_no_ratio_is_made_up() -> None:
    rates = [1000.0, 5000.0, 10000.0]
    host = _samples("host", dict(zip(rates, [20, 22, 24], strict=True)), 50000)
    bridge = _samples("bridge", dict(zip(rates, [25, 27, 30], strict=True)), 50000, seed=3)
    curves = {c.layer: c for c in load_curves([*host, *bridge])}
    assert curves["host"].knee is None and curves["bridge"].knee is None
    (rows,) = load_ratios([*host, *bridge]).values()
    knee = by_layer(rows)["bridge"]["knee"]
    assert knee.ratio is None and knee.low is None and knee.censored == 1.0
    assert curves["host"].kept_up  # never behind: its capacity is a lower bound, no ratio
    assert by_layer(rows)["bridge"]["capacity"].ratio is None
    assert "&gt; 10 k/s" in render_load([*host, *bridge])


def test_closed_loop_and_single_rate_runs_have_no_load_section() -> None:
    closed = [Sample("rtt_p99_us", 20.0, "us", {"layer": "host", "workload": "rr"})]
    assert load_curves(closed) == [] and render_load(closed) == ""
    one = _samples("host", {1000.0: 20.0}, 50000)
    assert load_curves(one) == []


def test_the_knees_point_and_the_capacity_line() -> None:
    rates = [1000.0, 5000.0, 10000.0]
    slow = _samples("userspace", dict(zip(rates, [80, 100, 400], strict=True)), 9000)
    (curve,) = load_curves(slow)
    assert knee_point(curve).offered == 10000  # the first load at twice the lowest's p99
    flat = _samples("host", dict(zip(rates, [20, 21, 23], strict=True)), 30000)
    (never,) = load_curves(flat)
    assert knee_point(never).offered == 10000  # no knee: the highest load speaks
    found = [Sample("capacity_tps", v, "1/s", {"layer": "host", "hosts": "2", "nodes": "2",
                                              "design": "capacity", "workload": "rr"})
             for v in (30000, 33000, 31000)]
    assert capacities_found(found) == {"hosts=2, nodes=2": [30000, 33000, 31000]}
    html = render_load([*flat, *slow, *found])
    assert "shares of host's capacity" in html and "31 k/s (median of 3 runs" in html


def test_capacities_are_kept_apart_as_the_curves_are() -> None:
    found = [Sample("capacity_tps", v, "1/s", {"layer": "host", "hosts": "2", "nodes": "2",
                                              "mtu": mtu, "design": "capacity",
                                              "workload": "rr", "repetition": "0"})
             for v, mtu in ((30000, "1500"), (45000, "9000"))]
    got = capacities_found(found)
    assert got == {"hosts=2, mtu=1500, nodes=2": [30000], "hosts=2, mtu=9000, nodes=2": [45000]}
    assert set(got) == {config_of(s.labels) for s in found}


def test_a_label_the_axis_sets_is_not_held_fixed_along_it() -> None:
    samples = []
    for share, offered in (("0.1", "4100/s"), ("0.5", "20500/s")):
        for layer in ("host", "bridge"):
            samples.append(Sample("rtt_p99_us", 10.0, "us", {
                "layer": layer, "rr.share": share, "offered": offered, "workload": "rr",
                "nodes": "2"}))
    assert follows_axis(samples, "rr.share", "offered")
    assert not follows_axis(samples, "rr.share", "nodes")  # the same at every share
    chart = sweep_curves(samples, "rr.share", {"offered": "4100/s", "nodes": "2"})
    assert chart is not None  # the headline's offered rate does not pin the curve to a point


def _with_p50(layer: str, at: dict[float, tuple[float, float]], seed: int) -> list[Sample]:
    """``layer``'s samples with (p50, p99) at each rate, 6 repetitions with 3 % noise."""
    rng = np.random.default_rng(seed)
    out = []
    for rate, (p50, p99) in at.items():
        for r in range(6):
            labels = {"layer": layer, "workload": "rr", "offered": f"{rate:g}/s",
                      "repetition": str(r), "loop": "open"}
            noise = float(rng.normal(1.0, 0.03))
            out += [Sample("rtt_p99_us", p99 * noise, "us", dict(labels)),
                    Sample("rtt_p50_us", p50 * noise, "us", dict(labels)),
                    Sample("tps", rate * noise, "1/s", dict(labels))]
    return out


def test_the_p50s_knee_beside_the_p99s_holds_when_wake_ups_lift_the_low_load_p99() -> None:
    rates = [1000.0, 5000.0, 10000.0, 20000.0]
    # host's p99 at low load is wake-ups (250 us, then 170): its p99 knee is never reached,
    # while its p50 doubles between 10 and 20 k/s
    host = _with_p50("host", dict(zip(rates, [(40, 250), (41, 170), (45, 200), (120, 330)],
                                      strict=True)), 1)
    slow = _with_p50("wireguard", dict(zip(rates, [(150, 300), (170, 400), (400, 2000),
                                                   (1500, 9000)], strict=True)), 2)
    curves = {c.layer: c for c in load_curves([*host, *slow])}
    assert curves["host"].knee is None  # 330 < 2 x 170
    assert curves["host"].knee_p50 is not None and 10000 < curves["host"].knee_p50 < 20000
    assert curves["wireguard"].knee_p50 is not None and 5000 < curves["wireguard"].knee_p50 < 10000
    (rows,) = load_ratios([*host, *slow]).values()
    ratios = by_layer(rows)["wireguard"]
    assert ratios["knee"].ratio is None  # host's p99 knee lies beyond: no ratio made up
    p50 = ratios["knee-p50"]
    assert p50.ratio is not None and p50.low is not None and p50.high is not None
    assert p50.low <= p50.ratio <= p50.high < 1
    page = render_load([*host, *slow])
    assert "knee (p50)" in page and f"x{p50.ratio:.2f}" in page
