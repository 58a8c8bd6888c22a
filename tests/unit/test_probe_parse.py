"""Replays recorded real ``vnetbench-probe`` outputs (tests/data/probe) through the parsers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from vnetbench.errors import WorkloadError
from vnetbench.results.histogram import LatencyHistogram
from vnetbench.results.model import Sample
from vnetbench.workloads.probe.parse import (
    STAT_KEYS,
    LatencyStats,
    ProbeResult,
    histogram_records,
    interval_goodputs,
    parse_events,
    parse_output,
    parse_samples,
    to_samples,
)
from vnetbench.workloads.probe.workload import (
    PROBE_WORKLOADS,
    BarrierOptions,
    BarrierWorkload,
    GapsOptions,
    MediaOptions,
    RrOptions,
    StreamOptions,
    rr_workload,
    stream_workload,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "probe"


def _text(name: str) -> str:
    return (DATA / name).read_text()


def _by_metric(samples: list[Sample]) -> dict[str, Sample]:
    return {s.metric: s for s in samples}


def test_rr_tcp() -> None:
    result = parse_output(_text("rr-tcp.jsonl"), "rr")
    assert result.mode == "rr"
    assert result.start["protocol"] == "tcp"
    assert result.start["request"] == 100 and result.start["response"] == 200
    assert len(result.intervals) == 2
    assert result.number("tps") == pytest.approx(29996.769)
    assert result.number("transactions") == 59994
    rtt = result.rtt
    assert rtt.p50 == pytest.approx(14.759)
    assert rtt.min <= rtt.p1 <= rtt.p50 <= rtt.p99 <= rtt.p999 <= rtt.max
    samples = _by_metric(to_samples(result, {"layer": "loopback"}))
    assert samples["tps"].value == pytest.approx(29996.769)
    assert samples["tps"].unit == "1/s"
    assert samples["rtt_p50_us"].value == pytest.approx(14.759)
    assert samples["rtt_mean_us"].value == pytest.approx(33.311)
    assert samples["rtt_p999_us"].unit == "us"
    assert samples["cpu_user_s"].value == pytest.approx(0.027198)
    assert samples["cpu_sys_s"].value == pytest.approx(0.821024)
    assert samples["tps"].labels == {"workload": "probe-rr", "layer": "loopback",
                                     "protocol": "tcp"}
    assert samples["tps"].t_ns == 1679198104910
    for key in STAT_KEYS:
        assert f"rtt_{key}_us" in samples
    assert "lost" not in samples


def test_rr_udp_with_burst() -> None:
    samples = _by_metric(parse_samples(_text("rr-udp.jsonl"), "rr"))
    assert samples["tps"].value == pytest.approx(91038.186)
    assert samples["lost"].value == 0
    assert samples["rtt_p99_us"].value == pytest.approx(100.735)
    assert samples["tps"].labels["protocol"] == "udp"


def test_crr() -> None:
    result = parse_output(_text("crr.jsonl"), "crr")
    assert result.number("tps") == pytest.approx(8865.249)
    assert result.rtt.p50 == pytest.approx(96.255)
    samples = _by_metric(to_samples(result))
    assert samples["connect_errors"].value == 0
    assert samples["rtt_max_us"].value == pytest.approx(5918.376)


def test_stream_tcp() -> None:
    result = parse_output(_text("stream-tcp.jsonl"), "stream")
    samples = _by_metric(to_samples(result))
    assert samples["goodput_bps"].value == pytest.approx(40442126688.252)
    assert samples["goodput_bps"].unit == "bps"
    assert samples["bytes"].value == 10116005888
    assert samples["retransmits"].value == 12
    assert "loss" not in samples
    assert all(iv["goodput_bps"] > 1e9 for iv in result.intervals)


def test_stream_udp_loss() -> None:
    samples = _by_metric(parse_samples(_text("stream-udp.jsonl"), "stream"))
    assert samples["goodput_bps"].value == pytest.approx(199932928.0)
    assert samples["lost"].value == 0
    assert samples["loss"].value == 0.0
    assert samples["loss"].unit == "fraction"


def test_gaps_send_and_receive() -> None:
    result = parse_output(_text("gaps.jsonl"), "gaps")
    assert result.number("period_us") == 1000.0
    recv = result.stats("recv_gap_us")
    dev = result.stats("recv_gap_dev_us")
    assert recv.p50 == pytest.approx(999.935)
    assert dev.p50 == pytest.approx(recv.p50 - 1000.0, abs=1e-3)
    assert recv.p50 == pytest.approx(1000.0, rel=0.01)
    samples = _by_metric(to_samples(result))
    for prefix in ("send_gap", "recv_gap", "send_gap_dev", "recv_gap_dev"):
        for q in ("p1", "p25", "p50", "p75", "p99"):
            assert f"{prefix}_{q}_us" in samples
    assert samples["send_gap_p50_us"].value == pytest.approx(999.935)
    assert samples["recv_gap_p99_us"].value == pytest.approx(1044.479)
    assert samples["recv_gap_dev_p25_us"].value == pytest.approx(-5.185)
    assert samples["sent"].value == samples["received"].value == 2000
    assert samples["loss"].value == 0.0


def test_media_per_stream() -> None:
    result = parse_output(_text("media.jsonl"), "media")
    streams = result.media_streams
    assert [s.stream for s in streams] == [0, 1, 2]
    assert all(s.bitrate_bps == pytest.approx(2e6, rel=0.01) for s in streams)
    samples = to_samples(result)
    jitter = {s.labels["stream"]: s.value for s in samples if s.metric == "jitter_us"}
    assert jitter == {"0": pytest.approx(5.572), "1": pytest.approx(5.666),
                      "2": pytest.approx(4.719)}
    bitrate = [s for s in samples if s.metric == "bitrate_bps"]
    assert len(bitrate) == 3 and all(s.value == 2000320.0 for s in bitrate)
    assert {s.labels["stream"] for s in samples if s.metric == "loss"} == {"0", "1", "2"}
    total = _by_metric([s for s in samples if "stream" not in s.labels])
    assert total["total_bitrate_bps"].value == 6000960.0
    assert total["total_loss"].value == 0.0


@pytest.mark.parametrize("name,rank", [("barrier-rank0.jsonl", 0), ("barrier-rank1.jsonl", 1)])
def test_barrier_ranks(name: str, rank: int) -> None:
    result = parse_output(_text(name), "barrier")
    assert result.end["rank"] == rank
    assert result.number("rounds") == 94616  # both ranks stop after the same barrier
    samples = _by_metric(to_samples(result))
    assert samples["sync_p50_us"].labels["rank"] == str(rank)
    assert samples["sync_p50_us"].value > 0
    assert samples["sync_min_us"].value <= samples["sync_p50_us"].value
    assert samples["rounds_per_s"].value > 1000


def test_error_event_raises_with_message() -> None:
    with pytest.raises(WorkloadError, match="Connection refused"):
        parse_output(_text("error-unreachable.jsonl"), "rr")


def test_missing_end_raises() -> None:
    start_only = _text("rr-tcp.jsonl").splitlines()[0]
    with pytest.raises(WorkloadError, match="no end event"):
        parse_output(start_only, "rr", stderr="Segmentation fault")
    with pytest.raises(WorkloadError, match="no end event"):
        parse_output("", "rr")


def test_wrong_mode_raises() -> None:
    with pytest.raises(WorkloadError, match="expected crr"):
        parse_output(_text("rr-tcp.jsonl"), "crr")


def test_noise_lines_are_skipped() -> None:
    text = "warning: something\n{not json\n" + _text("crr.jsonl") + "\n[1,2]\n"
    assert len(parse_events(text)) == 4
    assert parse_output(text, "crr").number("transactions") == 17731


def test_incomplete_distribution_raises() -> None:
    with pytest.raises(WorkloadError, match="p99"):
        LatencyStats.from_dict({k: 1.0 for k in STAT_KEYS if k != "p99"})


def test_option_models() -> None:
    rr = RrOptions.model_validate({"protocol": "udp", "duration": "2s", "request": "1k"})
    assert rr.duration == 2.0 and rr.request == 1024 and rr.response == 200
    with pytest.raises(ValidationError):
        RrOptions.model_validate({"bogus": 1})
    with pytest.raises(ValidationError):
        RrOptions.model_validate({"protocol": "udp", "request": 8})
    assert MediaOptions.model_validate({"bitrate": "2mbit"}).bitrate == 2e6
    with pytest.raises(ValidationError):
        StreamOptions.model_validate({"bitrate": "1mbit"})  # TCP has no bitrate
    assert BarrierOptions.model_validate({}).rounds == 1000
    with pytest.raises(ValidationError):
        BarrierOptions.model_validate({"rounds": 10, "duration": "1s"})
    with pytest.raises(ValidationError):
        GapsOptions.model_validate({"size": 8})


def test_registry_builds_workloads() -> None:
    assert set(PROBE_WORKLOADS) == {"rr", "crr", "stream", "gaps", "barrier", "media"}
    for mode, (model, factory) in PROBE_WORKLOADS.items():
        workload = factory(model.model_validate({}))
        assert workload.name == f"probe-{mode}"
    rr_factory = PROBE_WORKLOADS["rr"][1]
    with pytest.raises(TypeError):
        rr_factory(MediaOptions())


def test_rr_end_event_histogram() -> None:
    result = parse_output(_text("rr-hist.jsonl"), "rr")
    assert result.rtt.p50 == pytest.approx(63.679)  # "hist" does not disturb the summary
    assert "hist" not in result.rtt.as_dict()
    assert all("hist" not in iv["rtt_us"] for iv in result.intervals)
    records = histogram_records(result, {"server": "n0", "client": "n1"})
    assert [r.metric for r in records] == ["rtt_us"]
    rec = records[0]
    assert rec.unit == "us"
    assert rec.labels == {"workload": "probe-rr", "protocol": "tcp", "server": "n0",
                          "client": "n1"}
    # the same labels as the samples, so a record finds its samples
    assert rec.labels == _by_metric(to_samples(result, {"server": "n0", "client": "n1"})
                                    )["rtt_p50_us"].labels
    assert rec.hist.count == result.number("transactions") == 16135
    assert rec.hist.buckets[0] == (13.663, 1)
    assert rec.hist.percentile(50) == result.rtt.p50
    assert rec.hist.percentile(99) == result.rtt.p99
    assert result.histogram("rtt_us") == rec.hist
    assert result.histogram("tps") is None


def test_barrier_histogram_record() -> None:
    result = parse_output(_text("barrier-hist-rank0.jsonl"), "barrier")
    (rec,) = histogram_records(result, {"node": "n0"})
    assert rec.metric == "sync_us"
    assert rec.labels == {"workload": "probe-barrier", "rank": "0", "node": "n0"}
    assert rec.hist.count == 3000
    assert rec.hist.percentile(50) == result.stats("sync_us").p50


def test_outputs_without_histograms_give_no_records() -> None:
    for name, mode in [("rr-tcp.jsonl", "rr"), ("gaps.jsonl", "gaps"),
                       ("stream-tcp.jsonl", "stream"), ("media.jsonl", "media")]:
        assert histogram_records(parse_output(_text(name), mode), {}) == []


def test_gaps_records_each_histogram() -> None:
    end = {"event": "end", "mode": "gaps", "protocol": "udp", "t_ns": 1,
           "send_gap_us": {**{k: 1.0 for k in STAT_KEYS}, "hist": [[1000, 2]]},
           "send_gap_dev_us": {k: 0.0 for k in STAT_KEYS},
           "recv_gap_us": {**{k: 1.0 for k in STAT_KEYS}, "hist": [[999, 1], [1001, 1]]},
           "recv_gap_dev_us": {k: 0.0 for k in STAT_KEYS}}
    records = histogram_records(ProbeResult("gaps", {}, end), {})
    assert [r.metric for r in records] == ["send_gap_us", "recv_gap_us"]
    assert records[1].hist == LatencyHistogram(((0.999, 1), (1.001, 1)))


@pytest.mark.parametrize("bad", [[[1000]], [[1000, -1]], "x", [["a", 1]], [[-5, 1]]])
def test_malformed_histogram_in_output_raises(bad: object) -> None:
    end = {"event": "end", "mode": "rr", "t_ns": 1,
           "rtt_us": {**{k: 1.0 for k in STAT_KEYS}, "hist": bad}}
    result = ProbeResult("rr", {}, end)
    assert result.rtt.p50 == 1.0
    with pytest.raises(WorkloadError, match="rr rtt_us"):
        histogram_records(result, {})


def test_stream_interval_goodput_min_max() -> None:
    samples = _by_metric(to_samples(parse_output(_text("stream-tcp.jsonl"), "stream")))
    assert samples["goodput_min_interval_bps"].value == pytest.approx(34670932566.648)
    assert samples["goodput_max_interval_bps"].value == pytest.approx(46232400927.142)
    assert samples["goodput_min_interval_bps"].unit == "bps"
    result = parse_output(_text("stream-tcp-intervals.jsonl"), "stream")
    assert result.start["interval_s"] == 0.5 and result.end["nodelay"] is False
    goodputs = [iv["goodput_bps"] for iv in result.intervals]
    assert len(goodputs) == 6
    samples = _by_metric(to_samples(result))
    assert samples["goodput_min_interval_bps"].value == min(goodputs) == 21271989338.673
    assert samples["goodput_max_interval_bps"].value == max(goodputs) == 22770175322.307
    udp = _by_metric(parse_samples(_text("stream-udp.jsonl"), "stream"))
    assert udp["goodput_min_interval_bps"].value == pytest.approx(199778740.702)


def _stream_result(durations: list[float], interval_s: float | None) -> ProbeResult:
    start: dict[str, Any] = {"event": "start", "mode": "stream"}
    if interval_s is not None:
        start["interval_s"] = interval_s
    intervals = [{"event": "interval", "index": i, "duration_s": d, "goodput_bps": 1e9 * (i + 1)}
                 for i, d in enumerate(durations)]
    end = {"event": "end", "mode": "stream", "goodput_bps": 1e9, "t_ns": 1}
    return ProbeResult("stream", start, end, intervals)


def test_stream_short_intervals_are_left_out() -> None:
    # nominal 1 s: 0.79 s is too short, 0.8 s counts
    assert interval_goodputs(_stream_result([1.0, 0.79, 0.8, 1.0], 1.0)) == [1e9, 3e9, 4e9]
    samples = _by_metric(to_samples(_stream_result([1.0, 0.5, 1.0, 0.2], 1.0)))
    assert samples["goodput_min_interval_bps"].value == 1e9
    assert samples["goodput_max_interval_bps"].value == 3e9
    # without interval_s (older probes): the median duration is the nominal one
    assert interval_goodputs(_stream_result([2.0, 2.0, 1.0], None)) == [1e9, 2e9]
    # fewer than two full intervals: no samples
    for durations in ([1.0], [1.0, 0.3], []):
        samples = _by_metric(to_samples(_stream_result(durations, 1.0)))
        assert "goodput_min_interval_bps" not in samples
        assert "goodput_max_interval_bps" not in samples
        assert "goodput_bps" in samples


def test_stream_nodelay_option() -> None:
    default = stream_workload(StreamOptions.model_validate({}))
    assert StreamOptions.model_validate({}).nodelay is False
    assert "--nodelay" not in default.client_args
    on = stream_workload(StreamOptions.model_validate({"nodelay": True, "streams": 2}))
    assert on.client_args.count("--nodelay") == 1
    assert on.detail == "tcp-x2-nodelay" and default.detail == "tcp-x1"
    with pytest.raises(ValidationError, match="nodelay"):
        StreamOptions.model_validate({"protocol": "udp", "nodelay": True})


def test_workloads_start_without_histograms() -> None:
    assert rr_workload(RrOptions.model_validate({})).histograms == []
    assert BarrierWorkload(BarrierOptions.model_validate({})).histograms == []


def test_each_full_stream_interval_is_a_sample_numbered_from_zero() -> None:
    samples = to_samples(_stream_result([1.0, 0.5, 1.0, 1.0], 1.0), {"layer": "bridge"})
    series = [s for s in samples if s.metric == "goodput_interval_bps"]
    assert [(s.labels["interval"], s.value) for s in series] == [("0", 1e9), ("2", 3e9),
                                                                  ("3", 4e9)]
    assert all(s.labels["layer"] == "bridge" and s.unit == "bps" for s in series)


def test_rr_open_loop_carries_offered_achieved_service_and_lateness() -> None:
    result = parse_output(_text("rr-open.jsonl"), "rr")  # 500/s Poisson over 2 flows, 1 s
    assert result.start["rate"] == 500 and result.start["flows"] == 2
    assert len(result.intervals) == 2  # the last interval ends with the window, emitted too
    samples = _by_metric(to_samples(result, {"layer": "loopback"}))
    assert samples["offered_tps"].value == 500
    assert samples["behind"].value == 0.0 and samples["behind"].unit == "flag"
    assert samples["unanswered"].value == 0
    assert samples["achieved_share"].value == pytest.approx(1.0, abs=0.01)
    assert samples["transactions"].value == result.number("scheduled")
    # from the arrival time, never shorter than from the actual write
    assert samples["rtt_p50_us"].value >= samples["service_p50_us"].value
    assert samples["send_late_p99_us"].unit == "us"
    assert {r.metric for r in histogram_records(result)} == {"rtt_us", "service_us"}
    closed = _by_metric(to_samples(parse_output(_text("rr-tcp.jsonl"), "rr")))
    assert not {"offered_tps", "behind", "service_p50_us", "send_late_p50_us"} & set(closed)


def test_rr_open_loop_options_args_labels_and_refusals() -> None:
    o = RrOptions(rate=2000, flows=4, arrivals="constant", duration=2.0)
    argv = rr_workload(o).client_args
    assert argv[argv.index("--rate") + 1] == "2000"
    assert argv[argv.index("--flows") + 1] == "4"
    assert argv[argv.index("--arrivals") + 1] == "constant"
    assert o.labels() == {"placement": "in-layer", "flows": "4", "loop": "open",
                          "offered": "2000/s"}
    assert o.interleave_refusal() is not None  # runs whole, never sliced into visits
    plain = RrOptions()
    assert "--rate" not in rr_workload(plain).client_args
    assert plain.labels() == {"placement": "in-layer"} and plain.interleave_refusal() is None
    with pytest.raises(ValidationError, match="TCP only"):
        RrOptions(protocol="udp", rate=100)
    with pytest.raises(ValidationError, match="burst applies to the closed loop"):
        RrOptions(rate=100, burst=2)
    assert argv[argv.index("--wait") + 1] == "block"  # the default, unlabelled


def test_a_spinning_open_loop_is_passed_on_labelled_and_refused_closed() -> None:
    spin = RrOptions(share=0.5, wait="spin")
    assert spin.labels()["wait"] == "spin" and spin.labels()["loop"] == "open"
    argv = rr_workload(spin.at_capacity(10_000)).client_args
    assert argv[argv.index("--wait") + 1] == "spin"
    probe = spin.capacity_probe()
    assert probe is not None and probe.wait == "block" and "wait" not in probe.labels()
    with pytest.raises(ValidationError, match="wait applies to the open loop"):
        RrOptions(wait="spin")
