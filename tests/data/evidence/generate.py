"""Generate the synthetic recorded runs under tests/data/evidence/ (deterministic).

Run ``python tests/data/evidence/generate.py`` to rewrite them. Known truths the tests check:

* run_layers: rr rtt_p50_us medians host 40, bridge 44, vxlan 60 (ratio 1.5), wireguard 70;
  rr tps medians host 20000, bridge 18000, vxlan 13000, wireguard 11500;
  stream goodput_bps medians host 9.4e9, bridge 8.9e9, vxlan 4.7e9 (ratio 0.5), wireguard 2.35e9;
  7 repetitions each; wireguard rtt_p99_us repetition 3 is an outlier (x3).
* run_layers_b: like run_layers but vxlan rtt x1.20 (regression) and bridge tps x1.10 (improved).
* run_sweep: rr tps vs nodes 2..32, linear (1500/node) to 16 then degraded from 20; knee at 16.
* run_truncated: killed mid-write (status running, last line cut).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from vnetbench.results.model import Sample
from vnetbench.results.store import RUN_FILE, SAMPLES_FILE, RunStatus, RunWriter
from vnetbench.results.warnings import check_offloads

HERE = Path(__file__).resolve().parent
OFFSETS = (-0.02, 0.01, -0.005, 0.0, 0.02, -0.01, 0.005)  # median 0: medians are exact
PCTL_SHAPE = {"rtt_p1_us": 0.70, "rtt_p25_us": 0.88, "rtt_p50_us": 1.0, "rtt_p75_us": 1.15,
              "rtt_p99_us": 2.1}
RTT50 = {"host": 40.0, "bridge": 44.0, "vxlan": 60.0, "wireguard": 70.0}
TPS = {"host": 20000.0, "bridge": 18000.0, "vxlan": 13000.0, "wireguard": 11500.0}
GOODPUT = {"host": 9.4e9, "bridge": 8.9e9, "vxlan": 4.7e9, "wireguard": 2.35e9}
CPU_PER_TX_US = {"host": 18.0, "bridge": 20.0, "vxlan": 27.0, "wireguard": 41.0}
CPU_PER_GBPS = {"host": 0.11, "bridge": 0.12, "vxlan": 0.26, "wireguard": 0.62}
DURATION = 10.0
SCENARIO = {"name": "layers-2x2", "layers": list(RTT50), "nodes": 2, "hosts": 2,
            "workloads": [{"kind": "rr", "size": 64}, {"kind": "stream"}],
            "repetitions": 7, "duration": "10s", "warmup": "2s"}
ENVIRONMENT = {"kernel": "6.1.0-18-amd64", "cpu_model": "Intel(R) Xeon(R) CPU @ 2.20GHz",
               "cpus": 2, "memory_gib": 7.8, "governor": "performance", "smt": False,
               "vnetbench": "0.1.0", "python": "3.11.9", "debian": "12",
               "tools": {"iproute2": "6.1.0", "wireguard-tools": "1.0.20210914"}}
OFFLOADS = {
    "host": {"tso": "on", "gso": "on", "gro": "on", "tx-checksumming": "on"},
    "bridge": {"tso": "on", "gso": "on", "gro": "on", "tx-checksumming": "on"},
    "vxlan": {"tso": "on", "gso": "on", "gro": "off", "tx-checksumming": "on"},
    "wireguard": {"tso": "off", "gso": "on", "gro": "on", "tx-checksumming": "off"},
}


def _t(i: int) -> int:
    return 1_000_000_000_000 + i * 1_000_000


def layers_samples(rtt_factor: dict[str, float] | None = None,
                   tps_factor: dict[str, float] | None = None) -> list[list[Sample]]:
    """One list of samples per trial."""
    rtt_factor = rtt_factor or {}
    tps_factor = tps_factor or {}
    trials: list[list[Sample]] = []
    i = 0
    for rep, off in enumerate(OFFSETS):
        for layer in RTT50:
            base = {"layer": layer, "nodes": "2", "hosts": "2", "repetition": str(rep)}
            k = 1.0 + off
            # request/response
            lab = {**base, "workload": "rr", "trial": str(len(trials))}
            rr: list[Sample] = []
            for metric, shape in PCTL_SHAPE.items():
                v = RTT50[layer] * shape * k * rtt_factor.get(layer, 1.0)
                if layer == "wireguard" and metric == "rtt_p99_us" and rep == 3:
                    v *= 3.0
                rr.append(Sample(metric, round(v, 4), "us", lab, _t(i)))
            tps = TPS[layer] * (1.0 - off) * tps_factor.get(layer, 1.0)
            rr.append(Sample("tps", round(tps, 3), "1/s", lab, _t(i)))
            cpu = CPU_PER_TX_US[layer] * 1e-6 * tps * DURATION * (1.0 + off / 2)
            rr += [Sample("cpu_user_s", round(cpu * 0.35, 6), "s", lab, _t(i)),
                   Sample("cpu_sys_s", round(cpu * 0.65, 6), "s", lab, _t(i)),
                   Sample("duration_s", DURATION, "s", lab, _t(i))]
            for ns in ("n0", "n1"):
                rr.append(Sample("tcp_retrans_segs", float({"vxlan": 3, "wireguard": 7}.get(
                    layer, 0) + rep % 2), "count", {**lab, "netns": ns}, _t(i)))
            trials.append(rr)
            i += 1
            # stream
            lab = {**base, "workload": "stream", "trial": str(len(trials))}
            gp = GOODPUT[layer] * (1.0 - off)
            cpu = CPU_PER_GBPS[layer] * (gp / 1e9) * DURATION * (1.0 + off / 2)
            st = [Sample("goodput_bps", round(gp, 1), "bit/s", lab, _t(i)),
                  Sample("cpu_user_s", round(cpu * 0.2, 6), "s", lab, _t(i)),
                  Sample("cpu_sys_s", round(cpu * 0.8, 6), "s", lab, _t(i)),
                  Sample("duration_s", DURATION, "s", lab, _t(i))]
            devices = {"host": ["eth0"], "bridge": ["veth0", "br0"],
                       "vxlan": ["vxlan0", "veth0"], "wireguard": ["wg0", "veth0"]}[layer]
            for dev in devices:
                drops = {"vxlan0": 120, "wg0": 35, "br0": 2}.get(dev, 0) + rep
                for ns in ("n0", "n1"):
                    where = {**lab, "netns": ns, "device": dev}
                    st += [Sample("rx_drops", float(drops if ns == "n1" else 0), "packets",
                                  where, _t(i)),
                           Sample("tx_drops", float(drops // 10), "packets", where, _t(i)),
                           Sample("rx_packets", float(int(gp * DURATION / 8 / 1448)),
                                  "packets", where, _t(i))]
            for ns in ("n0", "n1"):
                st.append(Sample("tcp_retrans_segs", float({"vxlan": 40, "wireguard": 90,
                                                            "bridge": 2}.get(layer, 0) + rep),
                                 "count", {**lab, "netns": ns}, _t(i)))
            trials.append(st)
            i += 1
    return trials


def sweep_samples() -> list[list[Sample]]:
    trials: list[list[Sample]] = []
    i = 0
    slope = {"host": 1500.0, "bridge": 1350.0, "vxlan": 1000.0}
    for rep, off in enumerate(OFFSETS[:6]):
        for layer, s in slope.items():
            for nodes in (2, 4, 8, 12, 16, 20, 24, 28, 32):
                lab = {"layer": layer, "nodes": str(nodes), "hosts": "2", "workload": "rr",
                       "repetition": str(rep), "trial": str(len(trials))}
                peak = s * 16
                tps = s * nodes if nodes <= 16 else peak * (1.0 - 0.06 * (nodes - 16) / 4)
                rtt99 = 90.0 * (1 + 0.01 * nodes) if nodes <= 16 else 90.0 * 1.16 * (
                    1 + 0.25 * (nodes - 16) / 4)
                rtt99 *= {"host": 1.0, "bridge": 1.1, "vxlan": 1.45}[layer]
                k = 1.0 + off / 2
                trials.append([
                    Sample("tps", round(tps * k, 3), "1/s", lab, _t(i)),
                    Sample("rtt_p50_us", round(rtt99 / 2.1 * k, 4), "us", lab, _t(i)),
                    Sample("rtt_p99_us", round(rtt99 * k, 4), "us", lab, _t(i)),
                ])
                i += 1
    return trials


def write_run(name: str, trials: list[list[Sample]], scenario: dict[str, object],
              status: RunStatus = RunStatus.COMPLETE, warnings: bool = True) -> Path:
    path = HERE / name
    shutil.rmtree(path, ignore_errors=True)
    writer = RunWriter.create(path, scenario, ENVIRONMENT, run_id=name)
    for trial in trials:
        writer.append_samples(trial)
    writer.write_raw("trial-0000-netperf.txt", "MIGRATED TCP REQUEST/RESPONSE TEST\n...\n")
    if warnings:
        for w in check_offloads(OFFLOADS):
            writer.add_warning(w)
    if status is RunStatus.RUNNING:
        writer._samples.close()  # simulate a kill: no close()
    else:
        writer.close(status)
    meta = json.loads((path / RUN_FILE).read_text())
    meta["started"] = "2026-11-20T09:00:00+00:00"
    meta["finished"] = None if status is RunStatus.RUNNING else "2026-11-20T09:41:07+00:00"
    (path / RUN_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    return path


def main() -> None:
    write_run("run_layers", layers_samples(), SCENARIO)
    write_run("run_layers_b", layers_samples(rtt_factor={"vxlan": 1.2},
                                             tps_factor={"bridge": 1.1}), SCENARIO)
    sweep_scenario = {"name": "sweep-nodes", "layers": ["host", "bridge", "vxlan"],
                      "nodes": [2, 4, 8, 12, 16, 20, 24, 28, 32], "hosts": 2,
                      "workloads": [{"kind": "rr", "size": 64}], "repetitions": 6,
                      "duration": "10s"}
    write_run("run_sweep", sweep_samples(), sweep_scenario, warnings=False)
    path = write_run("run_truncated", layers_samples()[:5], SCENARIO, RunStatus.RUNNING,
                     warnings=False)
    with open(path / SAMPLES_FILE, "a") as fh:
        fh.write('{"labels": {"layer": "vxlan", "nodes": "2"}, "metric": "tp')


if __name__ == "__main__":
    main()
