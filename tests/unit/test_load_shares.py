"""Loads offered as shares of the baseline's capacity (``rr: {share: ...}``, run/capacity.py):
the options' probe and resolved rate, the capacity found once per configuration and recorded,
the refusals where it cannot be found, and the plan counting the probe's runs once."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from vnetbench.errors import ScenarioError, WorkloadError
from vnetbench.results.model import Sample
from vnetbench.run.capacity import CAPACITY_DESIGN, CAPACITY_RUNS, Capacities
from vnetbench.run.design import paired_designs
from vnetbench.scenario.sweep import expand
from vnetbench.workloads.probe.workload import RrOptions, rr_workload


def _scenario(**extra: object) -> dict[str, object]:
    return {"name": "s", "hosts": 2, "nodes": 2, "layers": ["host", "bridge"],
            "workloads": [{"rr": {"share": [0.1, 0.5, 1.0], "flows": 4, "duration": "1s"}}],
            "repeat": 2, **extra}


def test_share_options_probe_at_the_probe_rate_and_resolve_to_a_rate() -> None:
    o = RrOptions(share=0.25, flows=4)
    probe = o.capacity_probe()
    assert probe is not None and probe.rate == 0 and probe.share == 0  # the closed loop
    assert probe.flows == 4
    at = o.at_capacity(41_000)
    assert at.rate == 10_250 and at.labels()["offered"] == "10250/s"
    assert at.labels()["loop"] == "open"
    assert RrOptions(rate=500).capacity_probe() is None
    assert RrOptions(rate=500).at_capacity(1e5).rate == 500
    with pytest.raises(WorkloadError, match="cannot run before"):
        rr_workload(o)  # an unresolved share never runs as a closed loop
    with pytest.raises(ValidationError, match="not both"):
        RrOptions(share=0.5, rate=100)
    with pytest.raises(ValidationError, match="TCP only"):
        RrOptions(share=0.5, protocol="udp")
    with pytest.raises(ValidationError, match="burst"):
        RrOptions(share=0.5, burst=4)


def test_the_capacity_is_found_once_per_configuration_and_recorded() -> None:
    sf = expand(_scenario())
    capacities = Capacities()
    measured: list[float] = []
    recorded: list[Sample] = []
    said: list[str] = []

    def measure(probe: object) -> list[float]:
        assert isinstance(probe, RrOptions) and probe.rate == 0 and probe.flows == 4
        measured.append(1)
        return [40_000.0, 44_000.0, 41_000.0]

    rates = []
    for point in sf.points:
        kind, options = point.scenario.workload_options()[0]
        at = capacities.resolve(kind, options, point, measure, recorded.extend,
                                {"layer": "host", "aa": "a"}, said.append)
        assert isinstance(at, RrOptions)
        rates.append(at.rate)
    assert len(measured) == 1  # the later shares reuse the first point's capacity
    assert rates == [4_100, 20_500, 41_000]
    assert [s.value for s in recorded] == [40_000.0, 44_000.0, 41_000.0]
    assert {s.metric for s in recorded} == {"capacity_tps"}
    assert all(s.labels["design"] == CAPACITY_DESIGN for s in recorded)
    assert "41,000/s" in said[0]


def test_a_capacity_per_configuration_a_path_that_answers_nothing_is_an_error() -> None:
    sf = expand(_scenario(hosts=[1, 2]))
    capacities = Capacities()
    calls: list[int] = []

    def measure(_probe: object) -> list[float]:
        calls.append(1)
        return [10_000.0]

    for point in sf.points:
        kind, options = point.scenario.workload_options()[0]
        capacities.resolve(kind, options, point, measure, lambda _s: None, {}, lambda _m: None)
    assert len(calls) == 2  # one per host count
    point = sf.points[0]
    kind, options = point.scenario.workload_options()[0]
    with pytest.raises(WorkloadError, match="answered nothing"):
        Capacities().resolve(kind, options, point, lambda _p: [0.0], lambda _s: None, {},
                             lambda _m: None)


def test_the_plan_counts_the_capacity_runs_once() -> None:
    sf = expand(_scenario())
    designs = paired_designs(sf, lambda p: list(p.scenario.layers))
    runs = [d.workloads[0].capacity_runs for d in designs]
    assert runs == [CAPACITY_RUNS, 0, 0]
    first, later = designs[0], designs[1]
    assert first.session_seconds(0) - later.session_seconds(0) == pytest.approx(
        CAPACITY_RUNS * 1.0)
    assert "capacity found first" in first.describe()


@pytest.mark.parametrize(("extra", "why"), [
    ({"layers": ["bridge", "macvlan"]}, "which layers does not list"),
    ({"pairing": "off"}, "paired design"),
])
def test_shares_refused_without_a_paired_baseline(extra: dict[str, object], why: str,
                                                  tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=why):
        expand(_scenario(**extra), str(tmp_path / "s.yaml"))
