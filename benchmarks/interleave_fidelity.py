"""Does interleaving change what a path measures? Each path alone, interleaved, and by a peer.

    python3 benchmarks/interleave_fidelity.py [--reps 5] [--seconds 3] [--layers host,bridge,nat]

Builds one lab per layer (1 host, 2 nodes, the run's CPU placement: server on CPU 0, client
on CPU 1) and keeps them all, then ``--reps`` times, in alternating order:

* each path alone: the probe's single-path rr (100/200 B, ``--seconds``), client in node 1;
* every path interleaved: one ``vnetbench-probe paired`` client, cut as a run cuts rr (100 ms
  slices in 10 ms pieces, 3 warm-up round trips a piece: ``run.interleave.cut_for``), as
  long per path as alone;
* each path alone by a peer tool: ``sockperf ping-pong`` (100 B both ways, RTT = 2 x its
  one-way latency).

Prints per path the medians over the repetitions of rr p50 and tps alone and interleaved,
their ratio (target: within 5%), and sockperf's p50 beside them. Needs root.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
from pathlib import Path

from vnetbench.backends.lab import Lab, open_lab
from vnetbench.lab.spec import LabSpec
from vnetbench.results.histogram import LatencyHistogram
from vnetbench.results.model import Sample
from vnetbench.run.interleave import InterleavedSession, PathLab, cut_for, path_labels
from vnetbench.run.platform import IdleStateHold
from vnetbench.scenario.model import LinkModel, PairingModel
from vnetbench.workloads.probe.workload import RrOptions, rr_workload
from vnetbench.workloads.registry import create_workload, workload_model

TARGET = 0.05


def value(samples: list[Sample], metric: str) -> float:
    return statistics.median(s.value for s in samples if s.metric == metric
                             and "source" not in s.labels and "cgroup" not in s.labels)


def alone(lab: Lab, seconds: float, raw: Path) -> tuple[float, float]:
    workload = rr_workload(RrOptions(duration=seconds))
    workload.prepare(lab)
    try:
        samples = workload.run(lab, raw)
    finally:
        workload.cleanup(lab)
    return value(samples, "rtt_p50_us"), value(samples, "tps")


def sockperf(lab: Lab, seconds: float, raw: Path) -> float:
    options = workload_model("sockperf").model_validate({"duration": max(1, round(seconds))})
    workload = create_workload("sockperf", options)
    workload.prepare(lab)
    try:
        samples = workload.run(lab, raw)
    finally:
        workload.cleanup(lab)
    return value(samples, "rtt_p50_us")


def interleaved(labs: dict[str, Lab], seconds: float, raw: Path, seed: int
                ) -> dict[str, tuple[float, float]]:
    paths = [PathLab(name, lab, path_labels({}, name, "")) for name, lab in labs.items()]
    options = RrOptions(duration=seconds)
    cut = cut_for("rr", PairingModel(), LinkModel())
    session = InterleavedSession("rr", options, paths, session=seed,
                                 rounds=round(seconds / cut.slice_s), slice_s=cut.slice_s,
                                 piece_s=cut.piece_s, settle_s=cut.settle_s, warm=cut.warm,
                                 seed=seed)
    result = session.run(raw)
    out = {}
    for name in labs:
        mine = [s for s in result.samples if s.labels.get("layer") == name]
        # the path's p50 over all its slices: of the merged histogram, as the report shows it
        hists = [h.hist for h in result.histograms if h.labels.get("layer") == name]
        p50 = LatencyHistogram.merge(hists).percentile(50)
        tps = {s.labels["repetition"]: s.value for s in mine if s.metric == "tps"}
        count = {s.labels["repetition"]: s.value for s in mine if s.metric == "transactions"}
        seconds_measured = sum(count[r] / tps[r] for r in count if tps.get(r))
        out[name] = (p50, sum(count.values()) / seconds_measured)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--layers", default="host,bridge,nat")
    args = parser.parse_args()
    names = args.layers.split(",")
    raw = Path(tempfile.mkdtemp(prefix="vnb-fidelity-"))
    got: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    hold = IdleStateHold()
    hold.open()
    try:
        with contextlib.ExitStack() as stack:
            labs = {n: stack.enter_context(open_lab(LabSpec(n, hosts=1, nodes=2, placement="cross")))
                    for n in names}
            for rep in range(args.reps):
                order = names if rep % 2 == 0 else names[::-1]
                for name in order:
                    p50, tps = alone(labs[name], args.seconds, raw)
                    got[name].setdefault("alone p50", []).append(p50)
                    got[name].setdefault("alone tps", []).append(tps)
                    got[name].setdefault("sockperf p50", []).append(
                        sockperf(labs[name], args.seconds, raw))
                for name, (p50, tps) in interleaved(labs, args.seconds, raw, rep).items():
                    got[name].setdefault("inter p50", []).append(p50)
                    got[name].setdefault("inter tps", []).append(tps)
                print(f"  repetition {rep + 1} done", file=sys.stderr)
    finally:
        hold.close()
    print(f"\nmedians over {args.reps} repetitions of {args.seconds:g} s per path "
          "(rr 100/200 B; sockperf 100 B both ways)")
    print(f"{'path':10}{'alone p50':>11}{'inter p50':>11}{'ratio':>8}{'alone tps':>11}"
          f"{'inter tps':>11}{'ratio':>8}{'sockperf p50':>14}  within 5%")
    ok = True
    for name in names:
        g = {k: statistics.median(v) for k, v in got[name].items()}
        r50 = g["inter p50"] / g["alone p50"]
        rtps = g["inter tps"] / g["alone tps"]
        fine = abs(r50 - 1) <= TARGET and abs(rtps - 1) <= TARGET
        ok &= fine
        print(f"{name:10}{g['alone p50']:>9.1f}us{g['inter p50']:>9.1f}us{r50:>8.3f}"
              f"{g['alone tps']:>11.0f}{g['inter tps']:>11.0f}{rtps:>8.3f}"
              f"{g['sockperf p50']:>12.1f}us  {'yes' if fine else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
