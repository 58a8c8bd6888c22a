"""Bring-your-own workloads on real labs, through ``vnetbench run``: a tiny HTTP server and a
client loop written here run as a ``command`` workload on two layers (``nat`` through a
published port) and reach the report; iperf3 and sockperf produce samples; a concurrent
stream + rr trial labels rr's samples as measured beside the stream."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vnetbench.results.store import RunStatus, load_run

from ..conftest import lab_leftovers

pytestmark = pytest.mark.root

CLIENT = """\
import http.client, json, sys, time
addr, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
latencies = []
end = time.monotonic() + seconds
while time.monotonic() < end:
    t = time.monotonic()
    conn = http.client.HTTPConnection(addr, port, timeout=5)
    conn.request("GET", "/hello.txt")
    body = conn.getresponse().read()
    conn.close()
    assert body == b"hello from the server", body
    latencies.append((time.monotonic() - t) * 1e6)
latencies.sort()
print(json.dumps({"tps": len(latencies) / seconds,
                  "rtt_p50_us": latencies[len(latencies) // 2],
                  "requests": len(latencies)}))
"""

COMMAND = """\
name: byo-http
nodes: 2
layers: [host, nat]
noise_floor: false
platform: {{quiet: null}}
workloads:
  - command:
      name: http
      server: [sh, -c, 'echo -n "hello from the server" > {{workdir}}/hello.txt &&
               exec {python} -m http.server {{port}} --directory {{workdir}}']
      client: [{python}, {client}, "{{addr}}", "{{port}}", "1"]
      ports: [8000]
      metrics: json
      units: {{requests: count}}
      timeout: 20s
"""


def _left_of(out: Path) -> list[str]:
    """What the run's labs left on this host (other runs on the machine are not ours)."""
    ids = {json.loads(p.read_text())["run_id"] for p in out.glob("raw/trial-*/lab*.json")}
    assert ids
    return [x for x in lab_leftovers() if any(f"vnb{i}" in x for i in ids)]


def _run(tmp_path: Path, text: str) -> Path:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(text)
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "vnetbench", "run", str(scenario), "--out",
                           str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return out


def test_a_command_workload_runs_on_two_layers_and_reaches_the_report(tmp_path: Path) -> None:
    client = tmp_path / "client.py"
    client.write_text(CLIENT)
    out = _run(tmp_path, COMMAND.format(python=sys.executable, client=client))
    run = load_run(out)
    assert run.status is RunStatus.COMPLETE
    mine = [s for s in run.samples if s.labels.get("app") == "http"
            and s.labels.get("workload") == "command" and "cgroup" not in s.labels]
    by_layer = {(s.labels["layer"], s.metric): s for s in mine}
    for layer in ("host", "nat"):
        assert by_layer[(layer, "requests")].value >= 5, layer  # served, body checked
        assert by_layer[(layer, "requests")].unit == "count"
        assert 0 < by_layer[(layer, "rtt_p50_us")].value < 1e6
        assert by_layer[(layer, "tps")].unit == "1/s"
    # measured with the same evidence as the built-in workloads
    assert any(s.metric == "cgroup_cpu_s" and s.labels.get("app") == "http" for s in run.samples)
    # the command's own output kept (each lab's run of each round in a folder of its own)
    kept = sorted(out.glob("raw/trial-0000/**/command-http-client.out"))
    assert kept and all(p.read_text().startswith('{"tps"') for p in kept)
    html = (out / "report.html").read_text()
    assert "headline-table" in html and ">command<" in html and "requests" in html
    assert not _left_of(out)


TOOLS = """\
name: tools
nodes: 2
layers: [bridge]
noise_floor: false
platform: {quiet: null}
workloads:
  - iperf3: {duration: 1s}
  - sockperf: {protocol: udp, duration: 1s}
  - concurrent:
      - stream: {duration: 2500ms}
      - rr: {duration: 1s}
"""


def test_iperf3_sockperf_and_rr_beside_a_stream_produce_samples(tmp_path: Path) -> None:
    out = _run(tmp_path, TOOLS)
    run = load_run(out)
    plain = [s for s in run.samples if not s.is_evidence]

    def value(workload: str, metric: str, **labels: str) -> float:
        found = [s.value for s in plain if s.metric == metric
                 and s.labels.get("workload") == workload
                 and all(s.labels.get(k) == v for k, v in labels.items())]
        assert len(found) == 1, (workload, metric, found)
        return found[0]

    assert value("iperf3", "goodput_bps", protocol="tcp") > 1e6
    assert value("sockperf", "rtt_p50_us", protocol="udp") > 0
    assert value("sockperf", "tps") > 10
    # latency under load: rr's samples say what ran beside them, and so do the stream's
    assert 0 < value("rr", "rtt_p50_us", beside="stream") < 1e6
    assert value("stream", "goodput_bps", beside="rr") > 1e6
    assert not [s for s in plain if s.labels.get("workload") == "rr" and "beside" not in s.labels]
    assert not _left_of(out)


UDP = """\
name: iperf3-udp
nodes: 2
layers: [bridge, nat]
noise_floor: false
platform: {quiet: null}
workloads:
  - iperf3: {protocol: udp, bitrate: 100mbit, duration: 1s}
"""


def test_iperf3_udp_runs_through_a_bridge_and_published_ports(tmp_path: Path) -> None:
    """iperf3's server opens its UDP socket only once a client asks for a UDP test: the run
    waits for its control port, and NAT publishes both (this failed as "nothing listens on
    udp port 5201")."""
    out = _run(tmp_path, UDP)
    run = load_run(out)
    for layer in ("bridge", "nat"):
        mine = [s for s in run.samples if not s.is_evidence
                and s.labels.get("layer") == layer and s.labels.get("protocol") == "udp"]
        goodput = [s.value for s in mine if s.metric == "goodput_bps"]
        assert goodput and min(goodput) > 1e6, (layer, goodput)
        assert [s for s in mine if s.metric == "jitter_us"], layer
    assert not _left_of(out)
