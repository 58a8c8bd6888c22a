"""How an interleaved slice is cut (pieces, warm-up round trips, a WAN path's longer pieces),
and the pauses of the machine in a slice (round trips over a millisecond): measured from the
slice's histogram, and named in the warning about a wide paired A/A floor."""

from __future__ import annotations

import math

import pytest

from vnetbench.results.histogram import HistogramRecord, LatencyHistogram
from vnetbench.results.model import AA_LABEL, PAIR_LABEL, Sample
from vnetbench.results.warnings import paired_noise_warnings, paused_share
from vnetbench.run.interleave import Cut, cut_for
from vnetbench.scenario.model import LinkModel, PairingModel
from vnetbench.workloads.paired import Slicing
from vnetbench.workloads.probe.paired import paused_samples
from vnetbench.workloads.probe.workload import CrrOptions, RrOptions, StreamOptions


def _hist(*pairs: tuple[float, int]) -> HistogramRecord:
    return HistogramRecord("rtt_us", "us", {"workload": "rr", "layer": "host"},
                           LatencyHistogram(tuple(pairs)))


def test_a_pause_is_a_round_trip_over_a_millisecond_and_many_times_the_median() -> None:
    # 10,000 round trips of 10 µs, two of 4 ms: 8 ms of pauses
    [sample] = paused_samples([_hist((10.0, 10_000), (4000.0, 2))], t_ns=1)
    assert sample.metric == "paused_s" and sample.value == pytest.approx(0.008)
    # a WAN path whose every round trip takes 20 ms has no pause at 25 ms
    [wan] = paused_samples([_hist((20_000.0, 100), (25_000.0, 3))], t_ns=1)
    assert wan.value == 0.0
    # other histograms (a stream's) have none
    assert paused_samples([HistogramRecord("sync_us", "us", {}, LatencyHistogram(((5.0, 1),)))],
                          t_ns=1) == []


def _slices(paused: float, wide: bool) -> list[Sample]:
    """Two baseline paths over 12 rounds: 0.1 s slices at 10,000 tps, ``paused`` s of pauses
    each; ``wide``: the two paths' tps disagree by up to 20% round by round."""
    out = []
    for r in range(12):
        for aa in ("a", "b"):
            labels = {"layer": "host", "workload": "rr", "hosts": "1", PAIR_LABEL: f"0.{r}",
                      AA_LABEL: aa, "design": "interleaved"}
            tps = 10_000.0 * (1.0 + (0.2 if wide and aa == "b" and r % 2 else 0.0))
            out += [Sample("tps", tps, "1/s", dict(labels)),
                    Sample("transactions", tps * 0.1, "count", dict(labels)),
                    Sample("paused_s", paused, "s", dict(labels))]
    return out


def test_a_wide_floor_names_the_share_of_time_the_machine_paused() -> None:
    [warning] = paired_noise_warnings(_slices(0.004, wide=True), 0.02)
    assert "tps" in warning.message
    assert "round trips over a millisecond took 4.0% of the baseline's measured time" \
        in warning.message
    # no pauses: the warning says nothing of them; a narrow floor: no warning at all
    [quiet] = paired_noise_warnings(_slices(0.0, wide=True), 0.02)
    assert "millisecond" not in quiet.message
    assert paired_noise_warnings(_slices(0.004, wide=False), 0.02) == []
    assert paused_share(_slices(0.004, wide=False), [("layer", "host")]) == pytest.approx(0.04)
    assert math.isnan(paused_share([], []))


def test_a_piece_must_fit_its_slice_and_hold_its_settling() -> None:
    assert PairingModel.model_validate({"slice": "100ms", "piece": "10ms"}).piece == 0.01
    with pytest.raises(ValueError, match=r"piece .* must not be longer than slice"):
        PairingModel.model_validate({"slice": "100ms", "piece": "200ms"})
    with pytest.raises(ValueError, match=r"settle .* must be shorter than piece"):
        PairingModel.model_validate({"piece": "10ms", "settle": "10ms"})
    with pytest.raises(ValueError, match=r"settle .* shorter than a piece .* set pairing.piece"):
        PairingModel.model_validate({"settle": "20ms"})
    assert PairingModel.model_validate({"settle": "20ms", "piece": "50ms"}).settle == 0.02


def _slicing(kind: str) -> Slicing:
    found = {"rr": RrOptions, "crr": CrrOptions, "stream": StreamOptions}[kind].slicing
    assert found is not None
    return found


def test_the_cut_of_each_workload_and_of_a_wan_path() -> None:
    default, lan = PairingModel(), LinkModel()
    assert cut_for(_slicing("rr"), default, lan) == Cut(0.1, 0.01, 0.0, 3)
    assert cut_for(_slicing("crr"), default, lan) == Cut(0.1, 0.01, 0.0, 3)
    assert cut_for(_slicing("stream"), default, lan) == Cut(0.25, 0.025, 0.0, 0)  # ten visits
    # a WAN link: pieces hold 20 round trips of the longest delay, up to the whole slice
    assert cut_for(_slicing("rr"), default, LinkModel(delay=0.0001)).piece_s == pytest.approx(0.01)
    assert cut_for(_slicing("rr"), default, LinkModel(delay=0.0001)).warm == 0
    assert cut_for(_slicing("rr"), default, LinkModel(delay=0.0005)).piece_s == pytest.approx(0.02)
    wan = LinkModel.model_validate({"pairs": [{"hosts": [0, 1], "delay": "15ms"}]})
    assert cut_for(_slicing("rr"), default, wan) == Cut(0.1, 0.1, 0.0, 0)  # no warm-up: the delay's
    # what the scenario sets wins
    mine = PairingModel.model_validate({"slice": "200ms", "piece": "50ms", "warm": 0})
    assert cut_for(_slicing("rr"), mine, wan) == Cut(0.2, 0.05, 0.0, 0)
