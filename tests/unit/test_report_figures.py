"""Unit tests of the report's interactive figures: SVG with hover tips and page-unique ids,
latency CDFs of merged histograms, per-interval time series, curves along any swept axis."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from vnetbench.report.figures import bars, latency, series, sweep
from vnetbench.report.svg import SVG_NS, standalone
from vnetbench.report.tables import format_value
from vnetbench.results.derive import scenario_duration, workload_option
from vnetbench.results.histogram import HistogramRecord, LatencyHistogram
from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario
from vnetbench.results.store import load_run
from vnetbench.workloads.probe.parse import interval_samples, parse_output, to_samples

PROBE_DATA = Path(__file__).resolve().parents[1] / "data" / "probe"
RECORDED = Path(__file__).resolve().parents[1] / "data" / "recorded"
TITLE = f"{{{SVG_NS}}}title"


def _tips(svg: str) -> list[tuple[str, str]]:
    """(data-layer, title text) of every tip group of an inline SVG."""
    root = ET.fromstring(svg)
    out = []
    for g in root.iter(f"{{{SVG_NS}}}g"):
        if g.get("class") == "tip":
            title = g.find(TITLE)
            assert title is not None and title.text
            out.append((g.get("data-layer", ""), title.text))
    return out


def _ids_and_refs(svg: str) -> tuple[list[str], set[str]]:
    ids = re.findall(r'\bid="([^"]+)"', svg)
    refs = set(re.findall(r'url\(#([^)]+)\)', svg)) | set(re.findall(r'href="#([^"]+)"', svg))
    return ids, refs


def _rr(layer: str, rep: int, **labels: str) -> dict[str, str]:
    return {"layer": layer, "nodes": "2", "hosts": "2", "workload": "probe-rr",
            "repetition": str(rep), "trial": f"{layer}{rep}", **labels}


def _bars_run() -> list[Sample]:
    return [Sample("tps", tps + rep, "1/s", _rr(layer, rep))
            for layer, tps in (("host", 20000.0), ("bridge", 18000.0)) for rep in range(3)]


def test_svg_carries_tips_and_only_prefixed_referenced_ids() -> None:
    chart = bars.throughput(_bars_run())
    assert chart is not None
    svg = chart.svg()
    tips = _tips(svg)
    assert [layer for layer, _ in tips] == ["host", "bridge"]
    host = tips[0][1]
    assert host.startswith("host · Transactions/s (probe-rr)") and "median 20 k/s" in host
    assert "\u00d70.900 of host" in tips[1][1]
    ids, refs = _ids_and_refs(svg)
    assert ids and all(i.startswith("throughput-") for i in ids)
    assert refs <= set(ids), "a reference points at an id the SVG does not define"
    assert set(ids) <= refs, "unreferenced ids are dropped"
    assert "<style" not in svg and "<metadata" not in svg and "<text" in svg
    ET.fromstring(standalone(svg).encode())  # the figure file is well-formed XML


def test_two_figures_in_one_page_share_no_id() -> None:
    samples = _bars_run() + [
        Sample("cpu_us_per_tx", 20.0 + rep, "us", _rr(layer, rep))
        for layer in ("host", "bridge") for rep in range(3)]
    a, b = bars.throughput(samples), bars.cpu_cost(samples)
    assert a is not None and b is not None
    ids_a, _ = _ids_and_refs(a.svg())
    ids_b, _ = _ids_and_refs(b.svg())
    assert not set(ids_a) & set(ids_b)


def _hist(layer: str, values_ns: list[tuple[int, int]], metric: str = "rtt_us",
          **labels: str) -> HistogramRecord:
    return HistogramRecord(metric, "us", _rr(layer, 0, **labels),
                           LatencyHistogram.from_buckets_ns(values_ns))


def test_latency_cdf_merges_each_layers_histograms() -> None:
    histograms = [
        _hist("host", [(10_000, 50), (20_000, 49), (90_000, 1)]),
        _hist("host", [(10_000, 50), (30_000, 50)], **{"rr.request": "64"}),
        _hist("bridge", [(15_000, 98), (200_000, 2)]),
        _hist("bridge", [(16_000, 10), (18_000, 5)], metric="sync_us"),  # another one
        _hist("bridge", [(16_000, 10)], metric="send_gap_us"),  # one bucket: no curve
    ]
    chart = latency.latency_cdf(histograms, where={"nodes": "2"})
    assert chart is not None and chart.name == "cdf"
    visible = [ax for ax in chart.figure.axes if ax.get_visible()]
    assert [ax.get_title(loc="left") for ax in visible] == [
        "round-trip time (probe-rr)", "round-trip time (probe-rr, rr.request=64)",
        "barrier sync time (probe-rr)"]
    first = visible[0]
    curves = {line.get_label(): line for line in first.get_lines()
              if not line.get_label().startswith("_")}
    assert set(curves) == {"host", "bridge"}
    # the CDF of host: 50 % at 10 us, 99 % at 20 us (the last bucket, 100 %, is left out)
    assert list(curves["host"].get_xdata()) == [10.0, 20.0]
    assert list(curves["host"].get_ydata()) == [0.5, 0.99]
    assert first.get_yscale() == "logit"
    (bridge,) = [t for layer, t in _tips(chart.svg())
                 if layer == "bridge" and t.startswith("bridge · round-trip time")]
    assert "p50 15 µs" in bridge and "p99 200 µs" in bridge and "100 values" in bridge
    # conditions: a histogram of another node count is left out
    assert latency.latency_cdf(histograms, where={"nodes": "4"}) is None


def test_time_series_places_intervals_on_the_scenarios_clock() -> None:
    samples = [Sample("goodput_interval_bps", 1e9 * (k + 1) + rep * 1e8, "bps",
                      {**_rr(layer, rep), "workload": "probe-stream", "interval": str(k)})
               for layer in ("host", "bridge") for rep in range(3) for k in range(4)]
    scenario = RecordedScenario.from_dict(
        {"workloads": [{"rr": {}}, {"stream": {"duration": "2s", "interval": "500ms"}}]})
    chart = series.time_series(samples, scenario)
    assert chart is not None and chart.name == "timeseries"
    (ax,) = [ax for ax in chart.figure.axes if ax.get_visible()]
    thick = [line for line in ax.get_lines() if line.get_label() == "bridge"]
    assert len(thick) == 1
    assert list(thick[0].get_xdata()) == [0.5, 1.0, 1.5, 2.0]
    assert list(thick[0].get_ydata()) == pytest.approx([1.1e9, 2.1e9, 3.1e9, 4.1e9])
    thin = [line for line in ax.get_lines() if line.get_linewidth() < 1]
    assert len(thin) == 6  # one per trial
    texts = [t for layer, t in _tips(chart.svg()) if layer == "host"]
    assert any(t.startswith("host at 1.5 s: median 3.1 Gbit/s over 3 trial(s)") for t in texts)
    # without an interval option the probe's default (1 s) is the step
    default = series.time_series(samples, RecordedScenario.from_dict({}))
    assert default is not None
    line = next(ln for ln in default.figure.axes[0].get_lines() if ln.get_label() == "host")
    assert list(line.get_xdata()) == [1.0, 2.0, 3.0, 4.0]


def test_sweep_axes_are_the_labels_every_trial_sample_carries() -> None:
    samples = [Sample("rtt_p50_us", 10.0, "us", {**_rr("host", 0), "link.delay": d,
                                                 "placement": p})
               for d in ("0ms", "10ms") for p in ("", "client-host")]
    samples.append(Sample("cgroup_cpu_s", 1.0, "s", {**_rr("host", 0), "link.delay": "0ms",
                                                     "cgroup": "n0"}))
    samples.append(Sample("goodput_interval_bps", 1.0, "bps",
                          {**_rr("host", 0), "link.delay": "0ms", "interval": "1"}))
    assert sweep.sweep_axes(samples) == ["link.delay"]
    assert sweep.sweep_axes([]) == []


@pytest.mark.parametrize(("values", "numeric", "order"), [
    (["10ms", "2ms", "0ms", "1s"], True, ["0ms", "2ms", "10ms", "1s"]),
    (["64", "16384", "1024"], True, ["64", "1024", "16384"]),
    (["64k", "1k", "2m"], True, ["1k", "64k", "2m"]),
    (["cross", "same", "off"], False, ["cross", "off", "same"]),
])
def test_axis_values_sort_by_what_they_mean(values: list[str], numeric: bool,
                                            order: list[str]) -> None:
    positions, is_numeric = sweep.axis_positions(values)
    assert is_numeric is numeric
    assert sorted(values, key=lambda v: positions[v]) == order


def test_curves_along_a_workload_option_leave_other_workloads_out() -> None:
    samples = []
    for layer, base in (("host", 40.0), ("vxlan", 60.0)):
        for size in ("64", "1024", "16384"):
            for rep in range(3):
                labels = {**_rr(layer, rep), "rr.request": size}
                samples.append(Sample("rtt_p99_us", base + int(size) / 100 + rep, "us",
                                      labels))
                samples.append(Sample("goodput_bps", 1e9, "bps",
                                      {**labels, "workload": "probe-stream"}))
    chart = sweep.sweep_curves(samples, "rr.request", where={"nodes": "2",
                                                            "rr.request": "64"})
    assert chart is not None and chart.name == "sweep-rr-request"
    visible = [ax for ax in chart.figure.axes if ax.get_visible()]
    assert [ax.get_title(loc="left") for ax in visible] == ["RTT p99 (probe-rr)"]
    vxlan = next(ln for ln in visible[0].get_lines() if ln.get_label() == "vxlan")
    assert list(vxlan.get_ydata()) == pytest.approx([61.64, 71.24, 224.84])
    assert [t.get_text() for t in visible[0].get_xticklabels()] == ["64", "1024", "16384"]
    tips = [t for layer, t in _tips(chart.svg()) if layer == "vxlan"]
    assert any("rr.request=16384: median 225 µs" in t for t in tips)
    # along nodes the chart keeps its name and a curve per layer
    assert sweep.sweep_curves(samples, "nodes") is None  # one node count: nothing to draw


def test_rr_and_media_intervals_become_time_series_samples() -> None:
    text = (PROBE_DATA / "rr-tcp.jsonl").read_text()
    result = parse_output(text, "rr")
    per_interval = [s for s in to_samples(result, {"layer": "host"}) if "interval" in s.labels]
    by_metric: dict[str, list[tuple[str, float]]] = {}
    for s in per_interval:
        by_metric.setdefault(s.metric, []).append((s.labels["interval"], s.value))
    assert by_metric["tps_interval"] == [("0", 14789.309), ("1", 45203.322)]
    assert by_metric["rtt_p50_interval_us"] == [("0", 66.495), ("1", 14.071)]
    assert by_metric["rtt_p99_interval_us"] == [("0", 99.903), ("1", 89.471)]
    media = parse_output((PROBE_DATA / "media.jsonl").read_text(), "media")
    (bitrate,) = interval_samples(media, {"workload": "probe-media"})
    assert (bitrate.metric, bitrate.value, bitrate.labels["interval"]) == (
        "bitrate_interval_bps", 5999981.391, "0")
    gaps = parse_output((PROBE_DATA / "gaps.jsonl").read_text(), "gaps")
    assert interval_samples(gaps, {}) == []


def test_workload_option_reads_both_spellings() -> None:
    scenario = RecordedScenario.from_dict({"duration": "9s", "workloads": [
        {"rr": {"interval": "250ms", "request": [64, 128]}},
        {"kind": "stream", "duration": "3s"}]})
    assert workload_option(scenario, "probe-rr", "interval") == 0.25
    assert workload_option(scenario, "probe-rr", "request") is None  # swept: no one value
    assert workload_option(scenario, "probe-stream", "interval") is None
    assert scenario_duration(scenario, "probe-stream") == 3.0
    assert scenario_duration(scenario, "probe-rr") == 9.0


def test_recorded_figures_show_the_measured_run() -> None:
    """The recorded (real) run's CDF and time series carry its own numbers: the CDF's p99 is
    the merged histograms' p99, the series steps by the scenario's 250 ms interval."""
    run = load_run(RECORDED / "report_figures")
    where = {"nodes": "2", "hosts": "2", "rr.request": "64"}
    cdf = latency.latency_cdf(run.histograms, where)
    assert cdf is not None
    merged = LatencyHistogram.merge(
        h.hist for h in run.histograms if h.metric == "rtt_us"
        and h.labels["layer"] == "bridge" and h.labels["rr.request"] == "64")
    assert merged.count > 1000
    p99 = format_value(merged.percentile(99), "x_us")
    assert any(t.startswith(f"bridge p99: {p99}") for _, t in _tips(cdf.svg()))
    over_time = series.time_series(run.samples, run.meta.recorded, where)
    assert over_time is not None
    axes = {ax.get_title(loc="left"): ax for ax in over_time.figure.axes if ax.get_visible()}
    goodput = axes["Goodput per interval (stream)"]
    host = next(ln for ln in goodput.get_lines() if ln.get_label() == "host")
    assert list(host.get_xdata())[:2] == [0.25, 0.5]
    assert "Transactions/s per interval (rr)" in axes
