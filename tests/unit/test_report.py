"""Unit tests of the report: derived CPU costs, headline table, figures and the HTML page."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from vnetbench.report.figures import bars, drops, latency, series, sweep
from vnetbench.report.html import build_report
from vnetbench.report.summary import summary_text
from vnetbench.report.tables import (
    format_value,
    headline_table,
    render_headline,
)
from vnetbench.results.derive import derive_cpu_costs, scenario_duration
from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario
from vnetbench.results.stats import median
from vnetbench.results.store import RunWriter, load_run

EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "evidence"


@pytest.fixture(scope="module")
def layers() -> list[Sample]:
    return load_run(EVIDENCE / "run_layers").samples


def _copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(EVIDENCE / name, tmp_path / name))


def test_derived_cpu_costs(layers: list[Sample]) -> None:
    derived = derive_cpu_costs(layers)
    per_tx = [s.value for s in derived if s.metric == "cpu_us_per_tx"
              and s.labels["layer"] == "vxlan"]
    assert len(per_tx) == 7 and median(per_tx) == pytest.approx(27.0)
    per_gbps = [s.value for s in derived if s.metric == "cpu_cores_per_gbps"
                and s.labels["layer"] == "wireguard"]
    assert median(per_gbps) == pytest.approx(0.62)
    # duration from the scenario when the trial has no duration_s sample
    lab = {"layer": "host", "trial": "1"}
    bare = [Sample("tps", 1000.0, "1/s", lab), Sample("cpu_user_s", 1.0, "s", lab),
            Sample("cpu_sys_s", 1.0, "s", lab)]
    assert derive_cpu_costs(bare) == []
    (one,) = derive_cpu_costs(bare, scenario_duration(RecordedScenario.from_dict({"duration": "4s"})))
    assert one.value == pytest.approx(2.0 / (1000.0 * 4.0) * 1e6)


def test_derived_costs_from_probe_counts_and_scenario_options() -> None:
    rr = {"layer": "bridge", "workload": "rr", "trial": "3"}
    st = {"layer": "bridge", "workload": "stream", "trial": "3"}
    samples = [
        Sample("transactions", 50_000.0, "count", rr), Sample("tps", 10_000.0, "1/s", rr),
        Sample("cpu_user_s", 0.4, "s", rr), Sample("cpu_sys_s", 0.6, "s", rr),
        Sample("bytes", 1.25e9, "B", st), Sample("goodput_bps", 2e9, "bps", st),
        Sample("cpu_user_s", 0.5, "s", st), Sample("cpu_sys_s", 1.5, "s", st),
        # host-wide collector samples are not process CPU
        Sample("cpu_user_s", 9.0, "s", {**rr, "cpu": "0"}),
    ]
    out = {s.metric: s for s in derive_cpu_costs(samples)}
    assert out["cpu_us_per_tx"].value == pytest.approx(1.0 / 50_000 * 1e6)  # 20 µs
    assert out["cpu_cores_per_gbps"].value == pytest.approx(2.0 / 10.0)  # 10 Gbit moved
    assert out["cpu_us_per_tx"].labels == rr
    scenario = RecordedScenario.from_dict(
        {"workloads": [{"rr": {"duration": "5s"}}, {"kind": "stream", "duration": 8}]})
    assert scenario_duration(scenario, "rr") == 5.0
    assert scenario_duration(scenario, "stream") == 8.0
    assert scenario_duration(scenario, "crr") is None
    assert scenario_duration(RecordedScenario.from_dict({"duration": ["1s", "2s"]})) is None
    no_counts = [s for s in samples if s.metric not in {"transactions", "bytes"}]
    got = {s.metric: s.value for s in derive_cpu_costs(no_counts, scenario=scenario)}
    assert got["cpu_us_per_tx"] == pytest.approx(1.0 / (10_000 * 5) * 1e6)
    assert got["cpu_cores_per_gbps"] == pytest.approx(2.0 / (2.0 * 8))


def test_summary_text() -> None:
    text = summary_text(EVIDENCE / "run_layers")
    lines = text.splitlines()
    assert lines[0] == "run run_layers: complete, 770 samples"
    assert lines[2].split() == ["layer", "rr", "p50", "rr", "p99", "rr", "tps", "rr", "cpu/tx",
                                "stream", "goodput", "stream", "cpu/Gbps"]
    vxlan = next(line for line in lines if line.strip().startswith("vxlan")).split()
    assert vxlan[1:3] == ["x1.50*", "+20µs"]  # ratio, called, and the added microseconds
    assert vxlan[8] == "x0.50*"
    no_base = summary_text(EVIDENCE / "run_layers", baseline="nonexistent")
    assert "rr layer=vxlan nodes=2 RTT p50: 60 µs (n=7)" in no_base


def test_format_value() -> None:
    assert format_value(41.26, "rtt_p50_us") == "41.3 µs"
    assert format_value(1250.0, "rtt_p99_us") == "1.25 ms"
    assert format_value(9.4e9, "goodput_bps") == "9.4 Gbit/s"
    assert format_value(20000.0, "tps") == "20 k/s"
    assert format_value(27.0, "cpu_us_per_tx") == "27 µs"
    assert format_value(float("nan"), "tps") == "\u2013"


def test_headline_table(layers: list[Sample]) -> None:
    table = headline_table([*layers, *derive_cpu_costs(layers)])
    assert table is not None
    assert table.layers == ["host", "bridge", "vxlan", "wireguard"]
    assert (table.nodes, table.hosts) == ("2", "2")
    cols = {(c.workload, c.metric): c for c in table.columns}
    assert list(cols)[:3] == [("rr", "rtt_p50_us"), ("rr", "rtt_p99_us"), ("rr", "tps")]
    cell = table.cells[("vxlan", cols[("rr", "rtt_p50_us")])]
    assert cell.ratio is not None and cell.ratio.ratio.value == pytest.approx(1.5)
    assert cell.verdict(table.factor) == "worse"
    gp = table.cells[("vxlan", cols[("stream", "goodput_bps")])]
    assert gp.ratio is not None and gp.ratio.ratio.value == pytest.approx(0.5)
    assert table.cells[("host", cols[("rr", "tps")])].verdict(1.05) == "baseline"
    html = render_headline(table)
    assert html.count("<tr>") == 2 + 4
    assert re.search(r'<td class="worse"[^>]*><div class="ratio">&times;1\.50</div>', html)
    assert headline_table([s for s in layers if s.labels.get("layer") != "host"]) is None


def test_plots_return_none_without_data() -> None:
    only_tps = [Sample("tps", 1.0, "1/s", {"layer": "host", "nodes": "2"})]
    assert latency.latency_whiskers(only_tps) is None
    assert bars.cpu_cost(only_tps) is None
    assert sweep.scaling(only_tps) is None
    assert drops.drops_and_retransmits(only_tps) is None
    assert latency.latency_cdf([]) is None and series.time_series(only_tps) is None
    chart = bars.throughput(only_tps)
    assert chart is not None and chart.svg().startswith("<svg ")


def test_report_of_layers_run(tmp_path: Path) -> None:
    run_dir = _copy("run_layers", tmp_path)
    path = build_report(run_dir)
    assert path == run_dir / "report.html"
    html = path.read_text()
    figures = sorted(p.name for p in (run_dir / "figures").glob("*"))
    assert figures == ["cpu_cost.svg", "drops.svg", "latency.svg", "throughput.svg"]
    assert len(re.findall(r'<svg [^>]*class="plot"', html)) == len(figures)
    assert "<img" not in html
    assert 'id="headline-table"' in html and "&times;1.50" in html
    # self-contained: nothing fetched from elsewhere (the SVG namespaces are names, not fetches)
    assert not re.search(r"(src|href)=\"(https?:)?//", html)
    assert "<link" not in html and "@import" not in html and "url(http" not in html
    assert html.count("<script>") == 1 and "fetch(" not in html
    for section in ("warnings", "environment", "latency", "throughput", "cpu_cost", "drops"):
        assert f'id="{section}"' in html
    assert 'id="scaling"' not in html  # no nodes sweep in this run
    assert "offload_mismatch" in html and "outliers" in html
    assert "Intel(R) Xeon(R)" in html
    assert "wireguard</b>: CPU per Gbit/s (stream) is 464% higher" in html


def test_report_of_sweep_marks_the_knee(tmp_path: Path) -> None:
    run_dir = _copy("run_sweep", tmp_path)
    html = build_report(run_dir).read_text()
    assert (run_dir / "figures" / "scaling.svg").is_file()
    assert 'id="scaling"' in html
    assert "Transactions/s at 16 nodes (host, bridge, vxlan)" in html
    assert 'id="cpu_cost"' not in html and 'id="drops"' not in html  # no data: omitted
    assert "No warnings" in html


def test_report_of_truncated_run_says_incomplete(tmp_path: Path) -> None:
    run_dir = _copy("run_truncated", tmp_path)
    html = build_report(run_dir, out=tmp_path / "elsewhere" / "r.html").read_text()
    assert 'class="badge incomplete"' in html and "truncated line" in html
    assert (tmp_path / "elsewhere" / "figures").is_dir()


def test_report_with_zero_drops_says_so(tmp_path: Path) -> None:
    with RunWriter.create(tmp_path, {"name": "quiet"}) as writer:
        for layer in ("host", "bridge"):
            for rep in range(6):
                lab = {"layer": layer, "workload": "rr", "repetition": str(rep)}
                writer.append_samples([
                    Sample("tps", 1000.0 + rep, "1/s", lab),
                    Sample("rx_drops", 0.0, "packets", {**lab, "netns": "n0", "device": "eth0"}),
                ])
    html = build_report(tmp_path).read_text()
    assert "No packet drops and no TCP retransmissions" in html
    assert not (tmp_path / "figures" / "drops.svg").exists()


def test_sweep_axes_are_never_pooled(tmp_path: Path) -> None:
    base = {"host": 100.0, "vxlan": 150.0}
    with RunWriter.create(tmp_path, {"name": "delay-sweep"}) as writer:
        for rep in range(6):
            for delay, extra in (("0ms", 0.0), ("10ms", 20_000.0)):
                for layer, rtt in base.items():
                    lab = {"layer": layer, "nodes": "2", "hosts": "1", "workload": "rr",
                           "delay": delay, "repetition": str(rep)}
                    writer.append_samples([Sample("rtt_p50_us", rtt + extra + rep * 0.1, "us",
                                                  lab)])
    samples = load_run(tmp_path).samples
    table = headline_table(samples)
    assert table is not None and table.config == {"nodes": "2", "hosts": "1", "delay": "0ms"}
    assert table.describe_config() == "2 nodes, 1 host, delay=0ms"
    (col,) = table.columns
    cell = table.cells[("vxlan", col)]
    assert cell.ratio is not None and cell.ratio.ratio.value == pytest.approx(1.5, rel=1e-3)
    html = build_report(tmp_path).read_text()
    assert "delay=0ms" in html and "No warnings" in html


def test_many_warnings_are_folded() -> None:
    from vnetbench.report.html import _warnings_html
    from vnetbench.results.warnings import EvidenceWarning, WarningKind

    many = [EvidenceWarning(WarningKind.NOISY_TRIAL, f"group {i} is noisy", "pin cpus")
            for i in range(8)]
    html = _warnings_html(many)
    assert html.count('<div class="warn">') == 8
    assert "<details><summary>3 more noisy_trial warnings</summary>" in html
    assert "No warnings" in _warnings_html([])


def test_pipeline_with_real_collectors(tmp_path: Path) -> None:
    """Store + real root-namespace collectors + derived costs + report, end to end."""
    from vnetbench.collectors import CpuCollector, NetDevCollector, TcpCollector

    collectors = [CpuCollector(), NetDevCollector(include_loopback=True), TcpCollector()]
    with RunWriter.create(tmp_path, {"name": "smoke", "duration": "1s"},
                          {"kernel": "test"}) as writer:
        for rep in range(6):
            for layer, rtt in (("host", 30.0), ("bridge", 36.0)):
                labels = {"layer": layer, "nodes": "2", "hosts": "1", "workload": "rr",
                          "repetition": str(rep), "trial": f"{layer}-{rep}"}
                before = [c.snapshot() for c in collectors]
                writer.append_samples(
                    [Sample("rtt_p50_us", rtt + rep * 0.01, "us", labels),
                     Sample("tps", 1e6 / rtt, "1/s", labels),
                     Sample("cpu_user_s", 0.2, "s", labels), Sample("cpu_sys_s", 0.3, "s", labels)]
                    + [s for c, b in zip(collectors, before, strict=True)
                       for s in c.delta(b, c.snapshot(), labels)])
    run = load_run(tmp_path)
    assert any(s.metric == "ctxt_switches" for s in run.samples)
    assert any(s.metric == "rx_packets" and s.labels["device"] == "lo" for s in run.samples)
    html = build_report(tmp_path).read_text()
    assert "&times;1.20" in html  # bridge rtt / host rtt
    assert 'id="cpu_cost"' in html and "No warnings" in html


def test_cpu_cost_charges_every_lab_cgroup_including_daemons() -> None:
    from vnetbench.results.derive import derive_cpu_costs
    from vnetbench.results.model import Sample

    trial = {"layer": "wireguard", "nodes": "2", "hosts": "2", "workload": "rr",
             "repetition": "0", "trial": "3"}
    samples = [
        Sample("tps", 1000.0, "1/s", dict(trial)),
        Sample("transactions", 2000.0, "count", dict(trial)),
        Sample("cpu_user_s", 0.1, "s", dict(trial)),
        Sample("cpu_sys_s", 0.1, "s", dict(trial)),
        Sample("cgroup_cpu_s", 0.3, "s", {**trial, "cgroup": "n0"}),
        Sample("cgroup_cpu_s", 0.3, "s", {**trial, "cgroup": "n1"}),
        Sample("cgroup_cpu_s", 0.4, "s", {**trial, "cgroup": "infra"}),
    ]
    (cost,) = [s for s in derive_cpu_costs(samples) if s.metric == "cpu_us_per_tx"]
    assert cost.value == pytest.approx(1.0 / 2000 * 1e6)  # 1.0 CPU-s over 2000 transactions
    without = derive_cpu_costs(samples[:4])
    assert without[0].value == pytest.approx(0.2 / 2000 * 1e6)


def test_scaling_draws_one_panel_per_hadoop_benchmark_with_knee() -> None:
    from vnetbench.report.figures.sweep import scaling
    from vnetbench.results.model import Sample

    samples = []
    for bench, slope in (("terasort", 2.0), ("dfsio-write", 1.0)):
        for nodes in (2, 4, 8, 16, 20, 24, 32):
            # flat until 16 workers, then degrading: the knee of study 000
            elapsed = 30.0 + (0 if nodes <= 16 else slope * 10 * (nodes - 16))
            for rep in range(2):
                samples.append(Sample("elapsed_s", elapsed + rep * 0.1, "s", {
                    "layer": "bridge", "nodes": str(nodes), "hosts": "1", "workload": "hadoop",
                    "benchmark": bench, "repetition": str(rep)}))
    chart = scaling(samples)
    assert chart is not None
    visible = [ax for ax in chart.figure.axes if ax.get_visible()]
    titles = {ax.get_title(loc="left") for ax in visible}
    assert titles == {"Elapsed time (hadoop terasort)", "Elapsed time (hadoop dfsio-write)"}
    assert "knee" in chart.caption.lower() and "16" in chart.caption


def test_report_says_how_streams_treated_nagle() -> None:
    from vnetbench.report.html import stream_semantics

    def semantics(scenario: dict[str, object]) -> str:
        return stream_semantics(RecordedScenario.from_dict(scenario))

    assert "Nagle on" in semantics({"workloads": [{"stream": {"duration": "1s"}}]})
    assert "TCP_NODELAY (nodelay: true)" in semantics(
        {"workloads": [{"stream": {"nodelay": True}}]})
    assert "both" in semantics(
        {"workloads": [{"stream": {}}, {"stream": {"nodelay": True}}]})
    assert semantics({"workloads": [{"rr": {}}, {"stream": {"protocol": "udp"}}]}) == ""


def test_report_says_which_controls_held() -> None:
    from vnetbench.report.html import controls_sentence

    text = controls_sentence({
        "placement": {"requested": True, "mode": "cross", "effective": True},
        "idle_states": {"requested": True, "effective": True},
        "quiet": {"requested": True, "effective": False}})
    assert "placement cross (client and server on different CPUs)" in text
    assert "idle states held off" in text and "busy machine" in text
    assert controls_sentence(None) == ""
    assert "not held" in controls_sentence({"idle_states": {"requested": True,
                                                             "effective": False}})
