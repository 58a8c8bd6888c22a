"""The report never states less than the run measured: the drops and retransmissions section
against recorded runs whose counters are above zero, and every section a filter could empty
says why instead of vanishing or denying evidence."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from vnetbench.explain.evidence import lab_role
from vnetbench.report.coverage import counter_totals, counters_sentence, measured_elsewhere
from vnetbench.report.figures import drops, latency
from vnetbench.report.hadoop import render_hadoop
from vnetbench.report.html import build_report
from vnetbench.report.tables import headline_table, select
from vnetbench.results.histogram import HistogramRecord, LatencyHistogram
from vnetbench.results.model import Sample
from vnetbench.results.store import RunWriter, load_run

DATA = Path(__file__).resolve().parents[1] / "data"
RECORDED_DEFAULT = DATA / "recorded" / "default"
RUNS = sorted(p.parent for p in DATA.glob("*/*/run.json"))
NONE_COUNTED = "No packet drops and no TCP retransmissions were counted"
COUNTERS = {"rx_drops", "tx_drops", "tcp_retrans_segs"}


def _section(html: str, name: str) -> str:
    found = re.search(rf'<section id="{name}">(.*?)</section>', html, re.S)
    assert found is not None, f"no section {name}"
    return found.group(1)


def _numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)]


def test_recorded_default_run_has_retransmissions_in_its_drops_section(tmp_path: Path) -> None:
    """The default comparison as recorded (a real run of ``vnetbench run``): its stream
    trials retransmit on every layer, native included. The section draws them and names the
    totals; it once said "none counted" because the headline's configuration names the
    client and server, labels a trial's counters do not carry."""
    run_dir = Path(shutil.copytree(RECORDED_DEFAULT, tmp_path / "run"))
    run = load_run(run_dir)
    retrans = sum(s.value for s in run.samples if s.metric == "tcp_retrans_segs")
    dropped = sum(s.value for s in run.samples if s.metric in {"rx_drops", "tx_drops"})
    assert retrans > 1000 and dropped > 100  # what the recording holds
    html = build_report(run_dir).read_text()
    assert NONE_COUNTED not in html
    section = _section(html, "drops")
    assert '<figure class="chart" data-chart="drops">' in section
    assert (run_dir / "figures" / "drops.svg").is_file()
    # the totals the section names are the run's own
    said = re.search(r'<p class="counters">In all, this run counted ([\d,]+) TCP '
                     r"retransmissions and ([\d,]+) packet drops", section)
    assert said is not None, section[-800:]
    assert _numbers(said.group(1)) == [retrans] and _numbers(said.group(2)) == [dropped]
    # every layer that retransmitted at the headline configuration has a bar in the figure
    table = headline_table(run.samples)
    assert table is not None and "client" in table.config  # the label counters lack
    svg = (run_dir / "figures" / "drops.svg").read_text()
    for layer in table.layers:
        mine = [s for s in select(run.samples, table.config)
                if s.metric == "tcp_retrans_segs" and s.labels["layer"] == layer]
        if sum(s.value for s in mine) > 0:
            assert f"{layer} \u00b7 stream" in svg, layer


@pytest.mark.parametrize("run", RUNS, ids=[f"{p.parent.name}/{p.name}" for p in RUNS])
def test_no_report_says_none_counted_while_a_counter_is_above_zero(tmp_path: Path,
                                                                   run: Path) -> None:
    run_dir = Path(shutil.copytree(run, tmp_path / "run"))
    samples = load_run(run_dir).samples
    above_zero = any(s.metric in COUNTERS and s.value > 0 for s in samples)
    html = build_report(run_dir).read_text()
    if above_zero:
        assert NONE_COUNTED not in html
        assert 'id="drops"' in html
    elif any(s.metric in COUNTERS for s in samples):
        assert NONE_COUNTED in html


def _counter_run(tmp_path: Path, counters_at: dict[str, float]) -> Path:
    """Two layers at 1 and 2 hosts; a stream trial's retransmission counter per host count
    as ``counters_at`` says (labels as the runner writes them: no client or server)."""
    with RunWriter.create(tmp_path, {"name": "counters"}) as writer:
        for hosts in ("1", "2"):
            for layer, rtt in (("host", 20.0), ("bridge", 24.0)):
                for rep in range(4):
                    trial = {"layer": layer, "nodes": "2", "hosts": hosts,
                             "repetition": str(rep), "trial": f"{hosts}{layer}{rep}"}
                    proc = {**trial, "workload": "rr", "client": "n1", "server": "n0"}
                    writer.append_samples([
                        Sample("rtt_p50_us", rtt + rep * 0.1, "us", proc),
                        Sample("tcp_retrans_segs", counters_at.get(hosts, 0.0), "segments",
                               {**trial, "workload": "rr", "netns": "vnb1234-n1"}),
                        Sample("rx_drops", 0.0, "packets",
                               {**trial, "workload": "rr", "netns": "vnb1234-h0",
                                "device": "vnb1234u0"}),
                    ])
    return tmp_path


def test_counters_only_elsewhere_are_named_not_denied(tmp_path: Path) -> None:
    """Retransmissions only at 1 host while the page shows 2 hosts: the section says none
    were above zero here and how many were counted at 1 host."""
    html = build_report(_counter_run(tmp_path, {"1": 7.0})).read_text()
    section = _section(html, "drops")
    assert NONE_COUNTED not in html
    assert "In all, this run counted 56 TCP retransmissions and 0 packet drops." in section
    assert "At 2 nodes, 2 hosts, client n1, server n0, the configuration this page shows, " \
           "no drop or retransmission counter was above zero." in section
    assert "At 2 nodes, 1 host: 56 TCP retransmissions and 0 packet drops" in section


def test_counters_here_are_drawn_despite_labels_they_lack(tmp_path: Path) -> None:
    run_dir = _counter_run(tmp_path, {"1": 3.0, "2": 5.0})
    samples = load_run(run_dir).samples
    table = headline_table(samples)
    assert table is not None and table.config["client"] == "n1"
    chart = drops.drops_and_retransmits(samples, table.config)
    assert chart is not None
    html = build_report(run_dir).read_text()
    section = _section(html, "drops")
    assert "At 2 nodes, 2 hosts, client n1, server n0: 40 TCP retransmissions and 0 packet " \
           "drops (drawn)" in section
    assert "At 2 nodes, 1 host: 24 TCP retransmissions" in section


def test_all_zero_counters_say_none_counted(tmp_path: Path) -> None:
    html = build_report(_counter_run(tmp_path, {})).read_text()
    assert f"{NONE_COUNTED} (32 counter readings, all zero)." in _section(html, "drops")


def test_counter_totals_and_sentence_without_a_configuration() -> None:
    lab = {"layer": "nat", "workload": "stream", "trial": "1", "netns": "vnbab12-n0"}
    samples = [Sample("tcp_retrans_segs", 3.0, "segments", lab),
               Sample("tx_drops", 1.0, "packets", {**lab, "device": "vnbab12e0"})]
    everything, here, others = counter_totals(samples, None)
    assert (everything.retransmissions, everything.drops, everything.readings) == (3.0, 1.0, 2)
    assert here.amounts == "3 TCP retransmissions and 1 packet drop" and not others
    assert counters_sentence(samples, None, True) == \
        "In all, this run counted 3 TCP retransmissions and 1 packet drop."
    assert lab_role({"netns": "vnbab12-h1", "device": "vnbab12t1"}) == ("h1", "t1")
    assert lab_role({"netns": "docker0ns", "device": "eth0"}) == ("docker0ns", "eth0")


def test_select_ignores_a_label_a_metric_never_records() -> None:
    proc = {"layer": "host", "nodes": "2", "hosts": "2", "workload": "rr", "client": "n1"}
    counter = {"layer": "host", "nodes": "2", "hosts": "2", "workload": "rr",
               "netns": "vnb1-n1"}
    other = {**counter, "hosts": "1"}
    samples = [Sample("tps", 1.0, "1/s", proc), Sample("tcp_retrans_segs", 2.0, "", counter),
               Sample("tcp_retrans_segs", 4.0, "", other)]
    where = {"nodes": "2", "hosts": "2", "client": "n1"}
    assert [s.value for s in select(samples, where)] == [1.0, 2.0]
    # a sample of a metric whose others carry the label must match it (absent = empty)
    assert select([*samples, Sample("tps", 9.0, "1/s", {**proc, "client": "n3"})],
                  where)[0].value == 1.0
    assert measured_elsewhere(samples, ["tcp_retrans_segs"], where) == \
        [{"nodes": "2", "hosts": "1"}]
    assert measured_elsewhere(samples, ["tps"], where) == []


def _hist(layer: str, circuit: str, base_ns: int) -> HistogramRecord:
    labels = {"layer": layer, "workload": "rr", "nodes": "2", "hosts": "2", "circuit": circuit}
    return HistogramRecord("rtt_us", "us", labels, LatencyHistogram.from_buckets_ns(
        [[base_ns, 5], [base_ns * 2, 3], [base_ns * 4, 1]]))


def test_cdf_draws_histograms_a_label_filter_does_not_describe_and_names_the_rest() -> None:
    """The page's configuration names a client the histograms do not carry: they are drawn;
    seven circuits make seven panels, six are drawn and the caption names the seventh."""
    hists = [_hist(layer, f"0-{i}", 10_000 * (i + 1)) for i in range(7)
             for layer in ("host", "bridge")]
    chart = latency.latency_cdf(hists, {"nodes": "2", "hosts": "2", "client": "n1"})
    assert chart is not None
    assert chart.caption.endswith("1 more distribution is not drawn: see the detail table.")
    assert latency.latency_cdf(hists, {"nodes": "2", "hosts": "1"}) is None


def test_hadoop_without_its_baseline_says_why() -> None:
    base = {"layer": "bridge", "workload": "hadoop", "hosts": "1", "nodes": "3"}
    samples = [Sample("elapsed_s", 10.0 + i, "s", {**base, "benchmark": "teragen",
                                                    "trial": str(i), "repetition": str(i)})
               for i in range(4)]
    section = render_hadoop(samples)
    assert 'class="empty"' in section
    assert "No ratios to native: the benchmarks ran on bridge" in section
    assert render_hadoop([]) == ""
