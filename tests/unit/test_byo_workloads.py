"""Bring-your-own workloads without a lab: iperf3's and sockperf's recorded output parsed,
the command workload's options, placeholders and metric extraction, a concurrent group's
ports, labels and start order, and how ``up`` picks its one lab from a scenario."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from vnetbench.cli.up import select_lab, up_text
from vnetbench.errors import ScenarioError, WorkloadError
from vnetbench.results.model import Sample
from vnetbench.scenario.sweep import expand
from vnetbench.workloads.base import WorkloadBase
from vnetbench.workloads.command import (
    CommandOptions,
    command_samples,
    fill,
    json_metrics,
    regex_metrics,
    unit_of,
)
from vnetbench.workloads.concurrent import ConcurrentOptions, ConcurrentWorkload
from vnetbench.workloads.iperf3 import Iperf3Options, iperf3_samples, parse_iperf3
from vnetbench.workloads.labelled import _kept
from vnetbench.workloads.registry import service_ports
from vnetbench.workloads.sockperf import parse_sockperf

DATA = Path(__file__).resolve().parents[1] / "data"


def _by_metric(samples: list[Sample]) -> dict[str, float]:
    return {s.metric: s.value for s in samples if "interval" not in s.labels}


# ---- iperf3 --------------------------------------------------------------------------------

def test_iperf3_tcp_result_gives_goodput_retransmits_intervals_and_cpu() -> None:
    samples = iperf3_samples(parse_iperf3((DATA / "iperf3/tcp.json").read_text()), 0.5)
    got = _by_metric(samples)
    assert got["goodput_bps"] == pytest.approx(11000381061.894608)  # the receiver's figure
    assert got["sent_bps"] == pytest.approx(11038447630.006487)
    assert got["retransmits"] == 8 and got["bytes"] == 1377566720
    assert "jitter_us" not in got and "loss" not in got
    intervals = [s for s in samples if s.metric == "goodput_interval_bps"]
    assert [s.labels["interval"] for s in intervals] == ["0", "1"]
    # host_user 0.33 % and host_system 19.85 % of 1.000277 s
    assert got["cpu_sys_s"] == pytest.approx(0.1985065 * 1.000277, rel=1e-4)


def test_iperf3_udp_result_gives_jitter_in_us_and_loss_as_a_fraction() -> None:
    got = _by_metric(iperf3_samples(parse_iperf3((DATA / "iperf3/udp.json").read_text())))
    assert got["jitter_us"] == pytest.approx(268.739625166689)
    assert got["lost"] == 1 and got["packets"] == 382
    assert got["loss"] == pytest.approx(0.002617801047120419)
    assert "retransmits" not in got


@pytest.mark.parametrize("text, message", [
    ((DATA / "iperf3/refused.json").read_text(), "unable to connect to server"),
    ("iperf3: error - unable to connect\n", "no JSON result"),
    ('{"start": {}, "intervals": [], "end": {}}', "no end summary"),
])
def test_iperf3_failures_are_workload_errors(text: str, message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        parse_iperf3(text)


def test_iperf3_options_refuse_what_iperf3_would() -> None:
    with pytest.raises(ValidationError, match="bitrate applies to UDP"):
        Iperf3Options.model_validate({"bitrate": "10mbit"})
    with pytest.raises(ValidationError, match="whole seconds"):
        Iperf3Options.model_validate({"duration": "1500ms"})
    assert Iperf3Options.model_validate({"reverse": True}).labels() == {"direction": "reverse"}


# ---- sockperf ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["tcp", "udp"])
def test_sockperf_report_gives_round_trip_percentiles_and_rate(name: str) -> None:
    text = (DATA / f"sockperf/{name}.txt").read_text()
    got = _by_metric(parse_sockperf(text))
    assert {"rtt_mean_us", "rtt_min_us", "rtt_max_us", "rtt_p50_us", "rtt_p99_us",
            "rtt_p999_us", "rtt_p9999_us", "rtt_p99999_us", "tps", "dropped"} <= set(got)
    assert got["rtt_min_us"] <= got["rtt_p25_us"] <= got["rtt_p50_us"] <= got["rtt_p99_us"] \
        <= got["rtt_max_us"]
    if name == "udp":  # values as printed in the recorded report
        assert got["rtt_p50_us"] == 11.316 and got["rtt_mean_us"] == 15.834
        assert got["tps"] == pytest.approx(34700 / 0.550)


def test_sockperf_without_statistics_or_one_way_is_refused() -> None:
    refused = ("sockperf: == version #3.7-no.git ==\n"
               "sockperf: ERROR: Can`t connect socket (errno=111 Connection refused)\n")
    with pytest.raises(WorkloadError, match="Connection refused"):
        parse_sockperf(refused)
    one_way = (DATA / "sockperf/udp.txt").read_text().replace("avg-rtt", "avg-latency")
    with pytest.raises(WorkloadError, match="--full-rtt"):
        parse_sockperf(one_way)


# ---- command -------------------------------------------------------------------------------

def _command(**extra: Any) -> CommandOptions:
    base: dict[str, Any] = {"server": ["srv", "--port", "{port}"],
                            "client": ["cli", "{addr}", "{port}"], "ports": [8000]}
    return CommandOptions.model_validate({**base, **extra})


def test_json_lines_give_metrics_last_value_wins_and_units_come_with_them() -> None:
    out = "\n".join([
        "starting",
        '{"tps": 10, "phase": "warm", "ok": true}',
        '{"metric": "p99_latency_ms", "value": 4.5, "unit": "ms"}',
        "[1, 2]",
        '{"tps": 12.5, "errors": 0, "bad name": 3, "nan": NaN}',
    ])
    assert json_metrics(out) == {"tps": (12.5, None), "p99_latency_ms": (4.5, "ms"),
                                 "errors": (0.0, None)}
    samples = command_samples(_command(metrics="json", units={"errors": "count"}), out, 1.0)
    assert {(s.metric, s.value, s.unit) for s in samples} == {
        ("tps", 12.5, "1/s"), ("p99_latency_ms", 4.5, "ms"), ("errors", 0.0, "count")}
    with pytest.raises(WorkloadError, match="no JSON object"):
        command_samples(_command(metrics="json"), "hello\n", 1.0)


def test_regex_metrics_take_the_last_match_and_name_a_missing_one() -> None:
    text = "Requests/sec: 100\nRequests/sec: 250.5\nLatency 1.5ms\n"
    got = regex_metrics(text, {"rps": r"Requests/sec:\s+([0-9.]+)",
                               "lat_ms": r"Latency (?P<value>[0-9.]+)ms"})
    assert got == {"rps": 250.5, "lat_ms": 1.5}
    with pytest.raises(WorkloadError, match="'p99' matched nothing"):
        regex_metrics(text, {"p99": r"p99=([0-9.]+)"})
    with pytest.raises(WorkloadError, match="not a number"):
        regex_metrics("x=abc", {"x": r"x=(\w+)"})


def test_exit_metrics_are_the_client_wall_time() -> None:
    [sample] = command_samples(_command(), "anything", 1.25)
    assert (sample.metric, sample.value, sample.unit) == ("elapsed_s", 1.25, "s")


def test_units_from_suffix_and_override() -> None:
    assert [unit_of(m, {}) for m in ("rtt_us", "t_ms", "wall_s", "goodput_bps", "rps",
                                     "widgets")] == ["us", "ms", "s", "bps", "1/s", "1"]
    assert unit_of("widgets", {"widgets": "count"}) == "count"


def test_placeholders_are_filled_and_braces_escaped() -> None:
    argv = ("curl", "http://{server}/x", "{port1}", "{{raw}}", "-H", "{node}")
    assert fill(argv, {"server": "10.0.0.2:8000", "port1": "9000", "node": "n1"}) == [
        "curl", "http://10.0.0.2:8000/x", "9000", "{raw}", "-H", "n1"]


@pytest.mark.parametrize("extra, message", [
    ({"client": ["cli", "{adress}"]}, r"unknown placeholder \{adress\}"),
    ({"client": ["cli", "{port3}"]}, r"unknown placeholder \{port3\}"),
    ({"server": ["srv", "{addr}"]}, r"server: unknown placeholder \{addr\}"),
    ({"client": ["cli", "{peers}"]}, "placement: node"),
    ({"ports": []}, "a server needs ports"),
    ({"ports": [8000, 8000]}, "different ports"),
    ({"metrics": "regex"}, "needs patterns"),
    ({"metrics": "regex", "patterns": {"x": "x=[0-9]+"}}, "in a group"),
    ({"metrics": "regex", "patterns": {"x": "x=([0-9]+"}}, "not a regular expression"),
    ({"patterns": {"x": "x=([0-9]+)"}}, "apply to metrics: regex"),
    ({"client": []}, "program first"),
    ({"name": "has space"}, "name"),
    ({"placement": "node", "client_on": "host"}, "placement: pair"),
])
def test_command_options_name_what_is_wrong(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _command(**extra)


def test_command_in_a_scenario_publishes_its_ports_and_labels_its_app() -> None:
    sf = expand({"layers": ["nat"], "workloads": [
        {"command": {"name": "web", "server": ["srv", "{port}"], "client": ["cli", "{server}"],
                     "ports": [8080, 9090], "timeout": "5s"}}]})
    [(kind, options)] = sf.points[0].scenario.workload_options()
    assert kind == "command" and isinstance(options, CommandOptions)
    assert options.timeout == 5.0 and options.labels() == {"app": "web"}
    assert service_ports([options]) == (8080, 9090)


# ---- concurrent ----------------------------------------------------------------------------

RRUL: dict[str, Any] = {"workloads": [{"stream": {"duration": "4s"}}, {"rr": {"duration": "2s"}}],
                        "settle": "1s"}


def test_members_without_a_port_get_their_own_and_a_clash_is_refused() -> None:
    options = ConcurrentOptions.model_validate(RRUL)
    ports = [o.model_dump()["port"] for _, o in options.members()]
    assert ports == [7000, 8000]
    assert options.service_ports() == (7000, 8000)
    same = {"workloads": [{"stream": {"duration": "4s", "port": 7500}},
                          {"rr": {"duration": "2s", "port": 7500}}]}
    with pytest.raises(ValidationError, match="port 7500 is also stream's"):
        ConcurrentOptions.model_validate(same)
    # a list alone is short for {workloads: [...]}, and validating twice changes nothing
    again = ConcurrentOptions.model_validate(options.model_dump())
    assert again.model_dump() == options.model_dump()
    sf = expand({"layers": ["host"], "workloads": [
        {"concurrent": [{"stream": {"duration": "7s"}}, {"rr": {}}]}]})
    [(kind, short)] = sf.points[0].scenario.workload_options()
    assert kind == "concurrent" and isinstance(short, ConcurrentOptions)
    assert [k for k, _ in short.members()] == ["stream", "rr"]
    assert service_ports([short]) == (7000, 8000)


@pytest.mark.parametrize("data, message", [
    ({"workloads": [{"stream": {"duration": "2s"}}, {"rr": {"duration": "2s"}}]},
     "make the load at least 3 s long"),
    ({"workloads": [{"rr": {}}]}, "give 2 to 8 workloads"),
    ({"workloads": [{"concurrent": {}}, {"rr": {}}]}, "unknown workload 'concurrent'"),
    ({"workloads": [{"stream": {"streems": 2}}, {"rr": {}}]}, r"workloads.0.stream: streems"),
])
def test_concurrent_groups_that_cannot_keep_their_promise_are_refused(
        data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ConcurrentOptions.model_validate(data)


class _Member(WorkloadBase):
    """A member workload that records when it ran and returns one sample."""

    def __init__(self, metric: str) -> None:
        self.metric = metric
        self.started = 0.0
        self.calls: list[str] = []

    def prepare(self, lab: object) -> None:
        self.calls.append("prepare")

    def run(self, lab: object, raw_dir: Path) -> list[Sample]:
        self.started = time.monotonic()
        self.calls.append("run")
        return [Sample(self.metric, 1.0, "us", {"client": "n1"})]

    def cleanup(self, lab: object) -> None:
        self.calls.append("cleanup")


def test_members_run_at_once_after_settle_and_say_what_ran_beside_them(tmp_path: Path) -> None:
    options = ConcurrentOptions.model_validate({**RRUL, "settle": "200ms"})
    group = ConcurrentWorkload(options)
    load, measured = _Member("goodput_bps"), _Member("rtt_p50_us")
    group.members = [load, measured]  # type: ignore[list-item]
    group.prepare(None)  # type: ignore[arg-type]
    samples = group.run(None, tmp_path)  # type: ignore[arg-type]
    group.cleanup(None)  # type: ignore[arg-type]
    assert load.calls == measured.calls == ["prepare", "run", "cleanup"]
    assert measured.started - load.started >= 0.19
    labels = {s.metric: s.labels for s in samples}
    assert labels["rtt_p50_us"] == {"client": "n1", "workload": "rr", "beside": "stream",
                                    "placement": "in-layer"}
    assert labels["goodput_bps"] == {"client": "n1", "workload": "stream", "beside": "rr",
                                     "placement": "in-layer", "direction": "forward"}


def test_the_runner_keeps_a_member_workload_label_only_for_groups() -> None:
    trial = {"layer": "bridge", "workload": "concurrent", "trial": "3"}
    own = {"workload": "rr", "beside": "stream"}
    assert _kept(trial, own, ("workload",)) == {"layer": "bridge", "trial": "3"}
    assert _kept(trial, own, ()) == trial


# ---- up: which lab -------------------------------------------------------------------------

def _scenario(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def test_up_takes_the_scenario_lab_or_asks_to_pick_one(tmp_path: Path) -> None:
    one = _scenario(tmp_path, "hosts: 2\nnodes: 4\nlayers: [vxlan]\nlink: {delay: 1ms}\n"
                              "workloads: [{rr: {port: 7300}}]\n")
    spec = select_lab(one)
    assert (spec.layer, spec.hosts, spec.nodes, spec.services) == ("vxlan", 2, 4, (7300,))
    assert spec.link.delay == pytest.approx(0.001)
    assert select_lab(None) == select_lab(None, "bridge", 2, 1)
    layers = _scenario(tmp_path, "layers: [host, bridge]\nnodes: [2, 4]\n")
    with pytest.raises(ScenarioError, match="pick one with --layer"):
        select_lab(layers, nodes=2)
    with pytest.raises(ScenarioError, match=r"sweeps nodes \(2, 4\).*--nodes/--hosts"):
        select_lab(layers, "bridge")
    assert select_lab(layers, "bridge", nodes=4).nodes == 4
    with pytest.raises(ScenarioError, match="--nodes 3 is not in the scenario"):
        select_lab(layers, "bridge", nodes=3)
    delays = _scenario(tmp_path, "layers: [bridge]\nlink: {delay: [0ms, 5ms]}\n")
    with pytest.raises(ScenarioError, match=r"link\.delay .* remove the sweep"):
        select_lab(delays)
    with pytest.raises(ScenarioError, match="unknown layer 'teleport'"):
        select_lab(None, "teleport")


def test_up_prints_every_node_and_how_to_enter_it() -> None:
    nodes = [{"name": "n0", "role": "node", "netns": "vnbab12-n0", "ip": "10.200.1.2",
              "host": 0, "ifname": "vnbab12e0"},
             {"name": "n1", "role": "node", "netns": "vnbab12-n1", "ip": "10.200.1.3",
              "host": 0, "ifname": "vnbab12e1"},
             {"name": "h0", "role": "host", "netns": "vnbab12-h0", "ip": "10.200.0.1",
              "host": 0, "ifname": "vnbab12u0"}]
    text = up_text({"run_id": "ab12", "layer": "bridge", "hosts": 1, "keeper": 42,
                    "build_seconds": 0.5, "nodes": nodes})
    assert "lab ab12 (bridge, 2 nodes on 1 host(s)) is up" in text
    assert "10.200.1.3" in text and "h0" in text
    assert "ip netns exec vnbab12-n0 bash" in text
    assert "vnetbench exec n0 -- ping -c 3 10.200.1.3" in text
    assert "vnetbench down" in text
