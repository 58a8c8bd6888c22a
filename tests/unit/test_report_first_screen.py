"""The report's first screen and its sections: the sentence per layer (numbers from the run's
own headline table), the test parameters beside the table, the note where a layer's path is
not crossed (from the layer's ``between_hosts`` and the topology's placement), the
environment folded behind a disclosure, the table of contents, plurals, and sections a
filter empties saying why."""

from __future__ import annotations

import html as htmllib
import re
import shutil
from pathlib import Path

import pytest

from vnetbench.backends.catalog import LAYERS
from vnetbench.explain.facts import crossing_parts
from vnetbench.report.answer import layer_sentences, one_host, path_note, path_notes
from vnetbench.report.context import parameters_html, repetitions_line, workload_line
from vnetbench.report.html import build_report
from vnetbench.report.tables import describe_config, headline_configs, headline_table
from vnetbench.results.derive import derive_cpu_costs
from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario
from vnetbench.results.store import RunWriter, load_run

DATA = Path(__file__).resolve().parents[1] / "data"
RECORDED_DEFAULT = DATA / "recorded" / "default"


@pytest.fixture(scope="module")
def default_html(tmp_path_factory: pytest.TempPathFactory) -> str:
    run_dir = Path(shutil.copytree(RECORDED_DEFAULT, tmp_path_factory.mktemp("r") / "run"))
    return build_report(run_dir).read_text()


def _text(fragment: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", "", fragment))


def _section(html: str, name: str) -> str:
    found = re.search(rf'<section id="{name}"[^>]*>(.*?)</section>', html, re.S)
    assert found is not None, f"no section {name}"
    return found.group(1)


def test_each_layer_has_a_sentence_with_the_tables_numbers() -> None:
    run = load_run(RECORDED_DEFAULT)
    samples = [*run.samples, *derive_cpu_costs(run.samples, scenario=run.meta.recorded)]
    table = headline_table(samples, histograms=run.histograms)
    assert table is not None
    sentences = {layer: _text(text) for layer, _, text in
                 layer_sentences(table, run.meta.recorded,
                                 crossing_parts(run.meta.environment))}
    assert list(sentences) == [la for la in table.layers if la != "host"]
    cols = {(c.workload, c.metric): c for c in table.columns}
    for layer, sentence in sentences.items():
        # the scenario lists rr first: its round trip and CPU per transaction are the answer
        rtt = table.cells[(layer, cols[("rr", "rtt_p50_us")])]
        cpu = table.cells[(layer, cols[("rr", "cpu_us_per_tx")])]
        goodput = table.cells[(layer, cols[("stream", "goodput_bps")])]
        assert rtt.ratio is not None and cpu.ratio is not None and goodput.ratio is not None
        r = rtt.ratio.ratio
        assert sentence.startswith(f"{layer}: {rtt.added} per round trip"), sentence
        assert f"rr p50 \u00d7{r.value:.2f}, 95% CI {r.ci.low:.2f}\u2013{r.ci.high:.2f}" \
            in sentence
        assert f"{cpu.added} CPU per transaction" in sentence
        assert f"\u00d7{cpu.ratio.ratio.value:.2f}" in sentence
        assert f"goodput \u00d7{goodput.ratio.ratio.value:.2f}" in sentence
        called = rtt.verdict(table.factor) in {"better", "worse"}
        assert ("not resolved" in sentence.split(";")[0] or "no difference" in
                sentence.split(";")[0]) != called, sentence


def test_first_screen_sections_in_order(default_html: str) -> None:
    order = [m.start() for m in (re.search(f'<section id="{name}"', default_html)
                                 for name in ("answer", "headline", "noise")) if m]
    assert len(order) == 3 and order == sorted(order)
    answer = _section(default_html, "answer")
    assert _text(answer).startswith("What this run found at 2 nodes, 2 hosts, client n1, "
                                     "server n0")
    assert answer.count("<li") == 7  # every layer but native: ipvlan was not measured
    headline = _section(default_html, "headline")
    assert headline.index('id="headline-table"') < headline.index('<aside id="parameters">')


def test_parameters_beside_the_table(default_html: str) -> None:
    aside = _text(re.search(r'<aside id="parameters">(.*?)</aside>', default_html,
                            re.S).group(1))  # type: ignore[union-attr]
    assert "measured at2 nodes, 2 hosts" in aside
    assert "rrTCP, 100 B request, 200 B response, 1 s" in aside
    assert "crra new TCP connection per transaction, 100 B request, 200 B response, 0.5 s" \
        in aside
    assert "streamTCP, 1 stream, 1 s, Nagle on" in aside
    assert "4 per layer (until CV 5%, at most 6, budget 260s); measured: 4 trials a layer, " \
           "8 of host" in aside
    assert "not measuredipvlan" in aside


def test_workload_lines_read_options_and_defaults() -> None:
    assert workload_line("rr", {}) == "TCP, 100 B request, 200 B response, 5 s"
    assert workload_line("rr", {"request": [64, 16384], "protocol": "udp"}) == \
        "UDP, 64 B | 16 KiB request, 200 B response, 5 s"
    assert workload_line("stream", {"streams": 4, "nodelay": True}) == \
        "TCP, 4 streams, 5 s, TCP_NODELAY"
    assert workload_line("oltp", {"tables": 4}).endswith("tables=4")
    assert parameters_html(RecordedScenario.from_dict({}), None, []) == ""


def test_path_notes_come_from_layer_facts_and_placement() -> None:
    parts = crossing_parts({})  # a run recorded without its legend: today's layers
    between = {name for name, cls in LAYERS.items() if cls.between_hosts}
    assert set(parts) == between
    assert {"vxlan", "wireguard", "userspace"} <= between
    assert not {"host", "bridge", "nat", "routed", "macvlan"} & between
    one = {"nodes": "2", "hosts": "1", "client": "n1", "server": "n0"}
    assert path_note("wireguard", one, parts) == ("the WireGuard tunnel is never crossed "
                                                  "here: every node is on the one emulated "
                                                  "host")
    assert path_note("bridge", one, parts) == "" and path_note("unknown-layer", one, parts) == ""
    two = {**one, "hosts": "2"}
    assert path_note("vxlan", two, parts) == ""  # n1 on host 1, n0 on host 0 (round-robin)
    # a run that recorded its legend is read by it, not by today's layers
    legend = {"legend": {"label_kinds": {}, "twins": {}, "between_hosts": {"bridge": "a wire"}}}
    assert crossing_parts(legend) == {"bridge": "a wire"}
    assert path_note("bridge", one, crossing_parts(legend)) == (
        "a wire is never crossed here: every node is on the one emulated host")
    assert path_note("wireguard", one, crossing_parts(legend)) == ""
    assert one_host({"nodes": "4", "hosts": "2", "client": "n2", "server": "n0"}) == \
        "client n2 and server n0 are both on emulated host 0"
    assert one_host({"nodes": "4", "hosts": "2"}) == ""


def test_one_host_table_marks_the_layers_it_does_not_cross(default_html: str) -> None:
    section = re.search(r'<section class="headline-more" id="at-1-host">(.*?)</section>',
                        default_html, re.S)
    assert section is not None
    body = section.group(1)
    for layer in ("vxlan", "wireguard", "userspace"):
        assert re.search(rf"{layer}<sup class=\"path\" title=\"[^\"]*never crossed", body), layer
        assert f"<b>{layer}</b>: the " in body
    for layer in ("bridge", "nat", "routed", "macvlan"):
        assert f"{layer}<sup" not in body
    main = _section(default_html, "headline")
    assert "<sup" not in main  # at 2 hosts client and server are on different hosts
    run = load_run(RECORDED_DEFAULT)
    samples = [*run.samples, *derive_cpu_costs(run.samples, scenario=run.meta.recorded)]
    one_host_table = headline_table(samples, config=headline_configs(samples)[1])
    assert one_host_table is not None
    assert set(path_notes(one_host_table, crossing_parts(run.meta.environment))) == \
        {"vxlan", "wireguard", "userspace"}


def test_environment_folded_and_contents_linked(default_html: str) -> None:
    env = _section(default_html, "environment")
    summary, _, rest = env.partition("<details>")
    assert "Intel(R) Xeon(R) Processor, 2 cores, 23.5 GiB" in _text(summary)
    assert "Debian GNU/Linux 12" in _text(summary)
    assert summary.count("<tr>") <= 8
    assert re.search(r"<summary>The full environment record \(\d+ entries of run\.json\)",
                     env)
    assert "root_sysctls.net.core.rmem_max" in rest
    nav = re.search(r'<nav class="toc"[^>]*>(.*?)</nav>', default_html, re.S)
    assert nav is not None
    targets = re.findall(r'href="#([^"]+)"', nav.group(1))
    assert targets[:3] == ["answer", "headline", "noise"]
    for target in targets:
        assert f'id="{target}"' in default_html, target
    for section in re.findall(r'<section id="([^"]+)"', default_html):
        assert section in targets, f"section {section} missing from the contents"


def test_plurals(default_html: str) -> None:
    text = _text(default_html)
    assert not re.search(r"(?<![\d.,])1 (hosts|nodes|streams|cores)\b", text)
    assert "2 nodes, 1 host" in text
    assert describe_config({"nodes": "1", "hosts": "1"}) == "1 node, 1 host"
    assert describe_config({"nodes": "16", "hosts": "2", "delay": "5ms"}) == \
        "16 nodes, 2 hosts, delay=5ms"


def _sparse_run(tmp_path: Path) -> Path:
    """rr at 2 hosts on host and bridge; a stream only at 1 host; nat only at 1 host
    without its baseline there."""
    def lab(layer: str, hosts: str, workload: str, rep: int) -> dict[str, str]:
        return {"layer": layer, "nodes": "2", "hosts": hosts, "workload": workload,
                "repetition": str(rep), "trial": f"{layer}{hosts}{workload}{rep}"}

    with RunWriter.create(tmp_path, {"name": "sparse"}) as writer:
        for rep in range(4):
            writer.append_samples([
                Sample("rtt_p50_us", 20.0 + rep, "us", lab("host", "2", "rr", rep)),
                Sample("rtt_p50_us", 30.0 + rep, "us", lab("bridge", "2", "rr", rep)),
                Sample("goodput_bps", 9e9 + rep, "bps", lab("host", "1", "stream", rep)),
                Sample("goodput_bps", 8e9 + rep, "bps", lab("bridge", "1", "stream", rep)),
                Sample("rtt_p50_us", 40.0 + rep, "us", lab("nat", "3", "rr", rep)),
            ])
    return tmp_path


def test_a_figure_empty_here_says_where_it_was_measured(tmp_path: Path) -> None:
    html = build_report(_sparse_run(tmp_path)).read_text()
    section = _section(html, "throughput")
    assert 'class="why"' in html and "<svg" not in section
    assert ("Nothing to draw at 2 nodes, 2 hosts, the configuration this page shows: the run "
            "measured transactions/s and goodput only at 2 nodes, 1 host.") in _text(section)
    # the configuration without its baseline says so instead of vanishing
    missing = re.search(r'<section class="headline-more empty" id="at-3-hosts">(.*?)</section>',
                        html, re.S)
    assert missing is not None
    assert "the baseline host was not measured at this configuration; the layers that were: " \
           "nat" in _text(missing.group(1))
    assert 'id="at-1-host"' in html and "Also measured at 2 nodes, 1 host" in html


def test_without_the_baseline_the_report_says_why(tmp_path: Path) -> None:
    html = build_report(_sparse_run(tmp_path), baseline="macvlan").read_text()
    section = _section(html, "answer")
    assert "No comparison with the baseline" in section
    assert "The baseline layer macvlan has no headline measurement at 2 nodes" \
        in _text(section)
    assert "Layers measured: host, bridge, nat" in _text(section)


def test_repetitions_line_counts_rounds_from_labels() -> None:
    assert repetitions_line(RecordedScenario.from_dict({"repeat": 3, "rounds": 5}), None, 5) == \
        "rounds 5; 3 per layer; 5 rounds measured"
    assert repetitions_line(RecordedScenario.from_dict({}), None, 1) == "1 round measured"
