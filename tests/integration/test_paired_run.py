"""Paired measurement on real namespaces: an interleaved session (every lab alive at once, one
client alternating between them), its evidence and statistics, its controls, a signal in the
middle of it, and paired trial blocks for a workload that cannot interleave."""

from __future__ import annotations

import json
import math
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from vnetbench.report.tables import headline_table
from vnetbench.report.why import explain_table
from vnetbench.results.derive import derive_cpu_costs
from vnetbench.results.stats import ratios_to_baseline
from vnetbench.results.store import RunStatus, load_histograms, load_run
from vnetbench.run.platform import DMA_LATENCY
from vnetbench.signals import EXIT_SIGTERM

from ..conftest import lab_leftovers

pytestmark = pytest.mark.root

SESSION: dict[str, Any] = {
    "name": "paired", "hosts": 1, "nodes": 2, "layers": ["host", "bridge", "nat"],
    "workloads": [{"rr": {"duration": "0.8s"}}, {"crr": {"duration": "0.8s"}},
                  {"stream": {"duration": "1s"}}],
    "repeat": 1, "seed": 4, "platform": {"quiet": {"threshold": 64, "wait": "5s"},
                                         "realtime": True},  # opt-in (off by default)
}


def _ours(out: Path) -> list[str]:
    """Kernel objects left of the labs this run built (other runs may be live meanwhile)."""
    ids = {json.loads(p.read_text())["run_id"] for p in out.glob("raw/*/lab*.json")}
    assert ids, "the run recorded no lab"
    return [x for x in lab_leftovers() if any(f"vnb{i}" in x for i in ids)]


def _dma_latency() -> int:
    with DMA_LATENCY.open("rb") as f:
        return int(struct.unpack("i", f.read(4))[0])


def _run(tmp_path: Path, scenario: dict[str, Any]) -> tuple[subprocess.CompletedProcess[str], Path]:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "vnetbench", "run", str(path), "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    return proc, out


def test_an_interleaved_session_measures_every_path_round_by_round(tmp_path: Path) -> None:
    idle_before = _dma_latency() if DMA_LATENCY.exists() else None
    proc, out = _run(tmp_path, SESSION)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "4 labs built" in proc.stderr  # host twice (A/A), bridge, nat: all at once
    for kind, rounds, cut in (("rr", 8, "100 ms in 10 ms pieces"),
                              ("crr", 8, "100 ms in 10 ms pieces"), ("stream", 8, "250 ms in 25 ms pieces")):
        assert f"{kind}: 4 paths x {rounds} rounds of {cut}, interleaved" in proc.stderr
    run = load_run(out)
    assert run.status is RunStatus.COMPLETE

    # every path has a value in every round, labelled with its round and its design
    tps = [s for s in run.samples if s.metric == "tps" and s.labels["workload"] == "rr"]
    paths = {(s.labels["layer"], s.labels.get("aa", "")) for s in tps}
    assert paths == {("host", "a"), ("host", "b"), ("bridge", ""), ("nat", "")}
    for path in paths:
        mine = [s for s in tps if (s.labels["layer"], s.labels.get("aa", "")) == path]
        assert sorted(int(s.labels["repetition"]) for s in mine) == list(range(8))
        assert {s.labels["design"] for s in mine} == {"interleaved"}
        assert all(s.value > 500 for s in mine)
    assert len({s.labels["pair"] for s in tps}) == 8
    # a round is ten cycles over the paths, 10 ms a visit, each cycle in a fresh order: each
    # path's slice of a round adds up its ten pieces, spread over the round's whole second
    events = [json.loads(line) for line in
              next(out.glob("raw/*/paired-rr-*.jsonl")).read_text().splitlines()]
    rr = [e for e in events if e["event"] == "slice"]
    assert {e["pieces"] for e in rr} == {10}
    spans = [(e["t_ns"] - e["start_ns"]) / 1e9 for e in rr]
    assert min(spans) > 0.25  # not one 100 ms visit: pieces of it across the round
    assert all(0.09 < e["duration_s"] < 0.15 for e in rr)  # about 100 ms measured in all
    # the time each slice's round trips spent in pauses of the machine (over 1 ms)
    paused = [s for s in run.samples if s.metric == "paused_s" and s.labels["workload"] == "rr"]
    assert len(paused) == len(tps) and all(0.0 <= s.value < 0.1 for s in paused)

    # the CPU of each slice: the server's node, the layer's daemons and the shared client
    cpu = [s for s in run.samples if s.metric == "cgroup_cpu_s" and s.labels["workload"] == "rr"
           and s.labels["layer"] == "bridge"]
    assert {s.labels["cgroup"] for s in cpu} == {"n0", "n1", "infra"}
    client = [s for s in cpu if s.labels["cgroup"] == "n1"]
    assert all(s.labels["source"] == "probe-rusage" and s.value > 0 for s in client)
    server = [s for s in cpu if s.labels["cgroup"] == "n0"]
    assert all(s.value > 0 for s in server) and len(server) == 8
    # device counters of each lab's own devices, over the whole workload
    assert any(s.metric == "rx_packets" and s.labels.get("layer") == "nat"
               and s.labels.get("device", "").startswith("vnb") for s in run.samples)
    # and the UDP counters of every lab namespace (a tunnel's socket drops no device counts)
    udp = {s.labels["netns"].split("-", 1)[1] for s in run.samples
           if s.metric == "udp_rcvbuf_errors" and s.labels.get("layer") == "nat"}
    assert {"h0", "n0", "n1"} <= udp

    # judged round by round; each path's latency histogram merged over its slices
    histograms = load_histograms(out)
    ratios = ratios_to_baseline(run.samples)
    by = {(r.layer, r.labels["workload"], r.metric): r for r in ratios}
    nat = by[("nat", "rr", "rtt_p50_us")]
    assert nat.ratio.design == "interleaved" and nat.ratio.n == 8
    assert nat.noise is not None and not math.isnan(nat.floor)  # a floor from the A/A pair
    assert nat.ratio.value > 1.0  # DNAT and conntrack on every packet cost time
    assert by[("bridge", "stream", "goodput_bps")].ratio.design == "interleaved"
    crr = [h for h in histograms if h.labels["layer"] == "bridge" and h.labels["workload"] == "crr"]
    assert len(crr) == 1 and "pair" not in crr[0].labels
    slices = [s for s in run.samples if s.metric == "transactions" and s.labels["layer"] == "bridge"
              and s.labels["workload"] == "crr"]
    assert crr[0].hist.count == sum(s.value for s in slices)  # every slice's transactions

    # controls: idle states held during the session (released as in any run: test_platform);
    # the load outside the lab recorded, not waited for
    controls = json.loads((out / "run.json").read_text())["environment"]["controls"]
    assert controls["quiet"]["detail"].startswith("recorded, not waited for")
    # the servers and the layers' daemons ran under SCHED_FIFO (nat has none: 4 servers x 3)
    assert controls["realtime"]["effective"], controls["realtime"]
    assert "12 process(es) set" in controls["realtime"]["detail"]
    assert controls["idle_states"]["effective"] or idle_before is None
    report = (out / "report.html").read_text()
    assert "interleaved: every layer" in report
    # why: a why column beside the ratios, the breakdown of the added round trip per layer
    assert '<th rowspan="2" class="why"' in report and '<section id="breakdown">' in report
    assert (out / "figures" / "breakdown.svg").exists()
    # ... whose parts add up to the headline's own difference (the remainder shown)
    samples = [*run.samples, *derive_cpu_costs(run.samples, scenario=run.meta.recorded)]
    table = headline_table(samples, histograms=histograms)
    assert table is not None
    checked = 0
    for why in explain_table(samples, run.meta.recorded, run.meta.environment, table):
        for lw in why.layers:
            attr = lw.round_trip
            if why.workload != "rr" or attr is None:
                continue
            cell = next(c for (layer, col), c in table.cells.items()
                        if layer == lw.layer and col.workload == "rr"
                        and col.metric == "rtt_p50_us")
            assert cell.ratio is not None
            assert attr.measured == pytest.approx(cell.ratio.added)
            assert attr.explained_value + attr.remainder == pytest.approx(attr.measured)
            checked += 1
    assert checked == 2  # bridge and nat
    assert "design: crr, rr, stream: interleaved" in proc.stdout
    assert _ours(out) == []


def test_sigterm_in_a_session_keeps_what_was_measured_and_leaves_nothing(tmp_path: Path) -> None:
    scenario = {**SESSION, "workloads": [{"rr": {"duration": "0.5s"}},
                                         {"stream": {"duration": "8s"}}]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "vnetbench", "run", str(path), "--out",
                             str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    seen = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        seen.append(line)
        if "stream:" in line and "interleaved" in line:  # rr is kept; stream is under way
            break
    time.sleep(2.0)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_SIGTERM, "".join(seen) + err
    assert "Traceback" not in err
    run = load_run(out)
    assert run.status is RunStatus.INCOMPLETE
    workloads = {s.labels.get("workload") for s in run.samples if s.metric == "tps"}
    assert workloads == {"rr"}
    assert _ours(out) == []


def test_a_workload_that_cannot_interleave_runs_in_rounds_over_the_live_labs(
        tmp_path: Path) -> None:
    scenario = {"name": "rounds", "hosts": 1, "nodes": 2, "layers": ["host", "bridge"],
                "repeat": 3, "seed": 2,
                "workloads": [{"gaps": {"rate": 2000, "duration": "0.5s"}}],
                "platform": {"quiet": None}}
    proc, out = _run(tmp_path, scenario)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "gaps in rounds over 3 live labs" in proc.stderr
    assert "3 labs built" in proc.stderr  # built once, for every round
    run = load_run(out)
    gaps = [s for s in run.samples if s.metric == "recv_gap_p50_us"]
    assert len(gaps) == 3 * 3  # 3 rounds x (host a, host b, bridge)
    rounds: dict[str, list[str]] = {}
    for s in gaps:
        assert s.labels["design"] == "rounds"
        rounds.setdefault(s.labels["pair"], []).append(s.labels["layer"] + s.labels.get("aa", ""))
    assert sorted(rounds) == ["0.0", "0.1", "0.2"]
    assert all(sorted(v) == ["bridge", "hosta", "hostb"] for v in rounds.values())
    (ratio,) = [r for r in ratios_to_baseline(run.samples) if r.metric == "recv_gap_p50_us"]
    assert ratio.ratio.design == "rounds" and ratio.ratio.n == 3
    # each run's evidence comes from its own lab's collectors
    assert any(s.metric == "cgroup_cpu_s" and s.labels.get("design") == "rounds"
               for s in run.samples)
    assert _ours(out) == []


def test_busy_neighbours_put_a_workload_in_paired_trial_blocks(tmp_path: Path) -> None:
    scenario = {"name": "blocks", "hosts": 1, "nodes": 2, "layers": ["host", "bridge"],
                "repeat": 2, "seed": 2, "busy": True, "busy_duty": 0.05,
                "workloads": [{"gaps": {"rate": 2000, "duration": "0.5s"}}],
                "platform": {"quiet": None}}
    proc, out = _run(tmp_path, scenario)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "gaps in paired trial blocks (busy neighbours" in proc.stderr
    run = load_run(out)
    sent = [s for s in run.samples if s.metric == "recv_gap_p50_us"]
    # 2 rounds x (a bridge block + an A/A block) x 2 trials
    assert len(sent) == 8
    blocks: dict[str, list[str]] = {}
    for s in sent:
        assert s.labels["design"] == "blocks"
        blocks.setdefault(s.labels["pair"], []).append(
            s.labels["layer"] + s.labels.get("aa", ""))
    assert sorted(blocks) == ["0-aa", "0-bridge", "1-aa", "1-bridge"]
    assert all(sorted(v) in (["bridge", "hosta"], ["hosta", "hostb"]) for v in blocks.values())
    (ratio,) = [r for r in ratios_to_baseline(run.samples) if r.metric == "recv_gap_p50_us"]
    assert ratio.ratio.design == "blocks" and ratio.ratio.n == 2
    assert not ratio.ratio.resolvable  # two blocks can never be significant: honest
    # each trial's collectors: CPU per core and the receive softirq's budget per core
    squeezes = [s for s in run.samples if s.metric == "softnet_time_squeeze"]
    assert {s.labels["cpu"] for s in squeezes} >= {"0", "all"}
    assert len({s.labels["trial"] for s in squeezes}) == 8
    assert _ours(out) == []


def test_a_session_built_twice_splits_its_rounds_between_the_builds(tmp_path: Path) -> None:
    """``pairing.builds: 2``: the session's labs built, measured and torn down twice, the
    rounds split between the builds and numbered on, so that the pairs of one session hold
    both builds (a lab's build varies what it measures; one build's rounds cannot show it)."""
    scenario = {"name": "builds", "hosts": 1, "nodes": 2, "layers": ["host", "bridge"],
                "repeat": 3, "seed": 2, "pairing": {"builds": 2},
                "workloads": [{"gaps": {"rate": 2000, "duration": "0.3s"}},
                              {"rr": {"duration": "0.3s"}}],
                "platform": {"quiet": None}}
    proc, out = _run(tmp_path, scenario)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.count("3 labs built") == 2, proc.stderr[-3000:]
    assert "(build 1 of 2)" in proc.stderr and "(build 2 of 2)" in proc.stderr
    run = load_run(out)
    gaps = [s for s in run.samples if s.metric == "recv_gap_p50_us"]
    rounds: dict[str, list[str]] = {}
    for s in gaps:
        rounds.setdefault(s.labels["pair"], []).append(s.labels["layer"] + s.labels.get("aa", ""))
    session = gaps[0].labels["trial"]
    assert sorted(rounds) == [f"{session}.{r}" for r in range(3)]  # 1 round, then 2
    assert all(sorted(v) == ["bridge", "hosta", "hostb"] for v in rounds.values())
    rr = [s for s in run.samples if s.metric == "rtt_p50_us"]
    pairs = sorted({s.labels["pair"] for s in rr}, key=lambda p: int(p.rsplit(".", 1)[1]))
    numbers = [int(p.rsplit(".", 1)[1]) for p in pairs]
    assert numbers == list(range(len(numbers))) and len(numbers) >= 4  # numbered on
    assert all(sorted(s.labels["layer"] + s.labels.get("aa", "") for s in rr
                      if s.labels["pair"] == p) == ["bridge", "hosta", "hostb"] for p in pairs)
    (ratio,) = [r for r in ratios_to_baseline(run.samples) if r.metric == "rtt_p50_us"]
    assert ratio.ratio.n == len(numbers)
    facts = sorted(p.name for p in out.glob("raw/*/lab-bridge-build*.json"))
    assert facts == ["lab-bridge-build1.json", "lab-bridge-build2.json"]
    assert _ours(out) == []
