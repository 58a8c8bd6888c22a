"""Record the real runs kept under tests/data/recorded/ (as root; about a minute each).

``.venv/bin/python tests/data/recorded/record.py`` runs every ``*.yaml`` here, and the built-in default
comparison (``vnetbench run`` without a scenario, kept as ``default/``, about four minutes),
with vnetbench and keeps what a report draws (:func:`keep`). ``record.py --from RUN_DIR NAME``
keeps a run made elsewhere (``vnetbench run --out RUN_DIR``) as ``NAME/`` the same way;
``--slim`` keeps only what the headline and the breakdown of "why" read (``SLIM``), for
runs kept to test those. The numbers are measured on the machine that records them.

What is kept: ``run.json``; every sample without a place label; the per-cgroup CPU samples
(the lab's CPU per transaction) and the per-interval ones (time series); the drop and
retransmission counters (labelled with a namespace and a device), except a device's drop
counters that are zero in every trial (they draw nothing); what the breakdown of "why" reads
(``EXPLAIN``: the machine's CPU by state, busy, idle and softirq per core, the client's own
CPU, packets and bytes per device, the TCP counters that tell a loss from a spurious
retransmission, UDP socket drops); the latency histograms merged over the trials and
repetitions of each condition (what the CDFs draw and the headline's pooled percentiles
read). The other per-core CPU samples and the raw tool output are not kept.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "src"))

from vnetbench.results.histogram import HistogramRecord, LatencyHistogram  # noqa: E402

DROPPED_LABELS = ("device", "cpu", "netns", "source")
COUNTERS = ("tcp_retrans_segs", "rx_drops", "tx_drops")
DROPS = ("rx_drops", "tx_drops")
EXPLAIN = ("cpu_busy_s", "cpu_idle_s", "cpu_iowait_s", "cpu_softirq_s", "cpu_irq_s",
           "cpu_core_user_s", "cpu_core_sys_s", "cpu_nice_s", "cpu_steal_s", "cgroup_cpu_s",
           "ctxt_switches", "softnet_time_squeeze", "softnet_dropped", "rx_packets",
           "tx_packets", "rx_bytes", "tx_bytes", "tcp_out_segs", "tcp_dsack_recv",
           "tcp_sack_reorder", "tcp_loss_probes", "tcp_fast_retrans", "tcp_timeouts",
           "tcp_lost_retransmit", "udp_rcvbuf_errors", "udp_sndbuf_errors", "udp_in_errors",
           "profile_share")
"""Evidence the report's breakdown (``vnetbench.explain``) reads."""
PER_CORE = ("cpu_busy_s", "cpu_idle_s", "cpu_softirq_s")
"""Of it, what is kept per core (the busiest core's busy and softirq shares)."""


def _explained(sample: dict[str, object], labels: dict[str, object]) -> bool:
    """Whether the breakdown reads ``sample`` (machine-wide CPU, or one of ``PER_CORE``)."""
    if sample["metric"] not in EXPLAIN:
        return False
    return labels.get("cpu", "all") == "all" or sample["metric"] in PER_CORE
MERGED = ("trial", "repetition", "pair")
SLIM = ("rtt_p50_us", "rtt_p99_us", "rtt_mean_us", "tps", "transactions", "goodput_bps",
        "bytes", "retransmits", "cpu_user_s", "cpu_sys_s", "duration_s", "latency_mean_ms",
        "qps")
"""With ``--slim``: the workloads' own figures kept (besides the counters and ``EXPLAIN``)."""
BUILTIN = ("default",)
"""Built-in scenarios recorded beside the YAML files here (run by name, no file)."""


def _device_key(sample: dict[str, object]) -> tuple[str, ...]:
    labels = sample.get("labels", {})
    assert isinstance(labels, dict)
    netns = str(labels.get("netns", ""))
    prefix = netns.split("-", 1)[0]  # the lab's vnb<id>: a new one for every lab
    device = str(labels.get("device", ""))
    return (str(sample.get("metric")), str(labels.get("layer", "")),
            str(labels.get("hosts", "")), netns[len(prefix):],
            device[len(prefix):] if device.startswith(prefix) else device)


def keep(run: Path, target: Path, slim: bool = False) -> Path:
    """Copy what a report of ``run`` draws into ``target`` (replaced); ``slim``: only what
    its headline and breakdown read."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copy(run / "run.json", target / "run.json")
    lines = (run / "samples.jsonl").read_text().splitlines()
    parsed = [json.loads(line) for line in lines]
    dropping = {_device_key(s) for s in parsed if s["metric"] in DROPS and s["value"] > 0}
    with (target / "samples.jsonl").open("w") as dst:
        for line, sample in zip(lines, parsed, strict=True):
            labels = sample.get("labels", {})
            if sample["metric"] in DROPS:
                wanted = _device_key(sample) in dropping
            else:
                wanted = sample["metric"] in COUNTERS or _explained(sample, labels) or (
                    not any(k in labels for k in DROPPED_LABELS)
                    and (not slim or sample["metric"] in SLIM))
            if wanted:
                dst.write(line + "\n")
    merged: dict[str, tuple[HistogramRecord, list[LatencyHistogram]]] = {}
    source = run / "histograms.jsonl"
    for line in source.read_text().splitlines() if source.exists() else []:
        record = HistogramRecord.from_dict(json.loads(line))
        labels = {k: v for k, v in record.labels.items() if k not in MERGED}
        key = json.dumps([record.metric, labels], sort_keys=True)
        first = HistogramRecord(record.metric, record.unit, labels)
        merged.setdefault(key, (first, []))[1].append(record.hist)
    with (target / "histograms.jsonl").open("w") as dst:
        for first, hists in merged.values():
            whole = HistogramRecord(first.metric, first.unit, first.labels,
                                    LatencyHistogram.merge(hists))
            dst.write(whole.to_json() + "\n")
    return target


def record(scenario: Path | str) -> Path:
    """Run ``scenario`` (a YAML file here, or a built-in name) and keep it."""
    name = scenario.stem if isinstance(scenario, Path) else scenario
    with tempfile.TemporaryDirectory(prefix="vnb-record-") as tmp:
        out = Path(tmp) / "run"
        what = [str(scenario)] if isinstance(scenario, Path) else []
        subprocess.run([sys.executable, "-m", "vnetbench", "run", *what, "--out", str(out)],
                       check=True)
        return keep(out, HERE / name)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--slim"]
    if args[:1] == ["--from"] and len(args) == 3:
        print(f"kept {keep(Path(args[1]), HERE / args[2], slim='--slim' in sys.argv)}")
    else:
        for path in [*sorted(HERE.glob("*.yaml")), *BUILTIN]:
            print(f"recorded {record(path)}")
