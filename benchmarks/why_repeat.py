"""Does "why" repeat? The breakdown of two runs of one scenario, side by side.

    python3 benchmarks/why_repeat.py RUN1 RUN2 [--workloads rr,stream]

For each headline configuration and layer, the breakdowns the report draws (``explain``):
the round trip a transaction adds (rr) split into the CPU each of the lab's processes added,
and a stream's throughput ratio as the product of the lab's CPU per Gbit/s and its CPU kept
busy. Printed for both runs with, per layer, whether they agree: the same largest part, and
every part within the larger of the two runs' floors of each other (for a ratio's factors:
within that relative floor); and, looser, whether they tell the same story: every part's
share of the measured difference (of its logarithm, for a ratio) within 15 points. The
measured differences themselves are the report's headline cells.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from vnetbench.explain.attribution import Attribution
from vnetbench.report.tables import headline_configs, headline_table
from vnetbench.report.why import explain_table
from vnetbench.results.derive import derive_cpu_costs
from vnetbench.results.store import load_run

Key = tuple[str, str, str, str]
"""(configuration, workload, layer, quantity)."""


def breakdowns(run_dir: Path, workloads: set[str]) -> dict[Key, Attribution]:
    run = load_run(run_dir)
    samples = [*run.samples, *derive_cpu_costs(run.samples, scenario=run.meta.recorded)]
    out: dict[Key, Attribution] = {}
    for config in headline_configs(samples):
        table = headline_table(samples, config=config, histograms=run.histograms)
        if table is None:
            continue
        where = table.describe_config()
        for why in explain_table(samples, run.meta.recorded, run.meta.environment, table):
            if why.workload not in workloads or why.name != why.workload:
                continue
            for lw in why.layers:
                for attr in (lw.round_trip, lw.throughput):
                    if attr is not None:
                        out[(where, why.name, lw.layer, attr.quantity)] = attr
    return out


def text(attr: Attribution) -> str:
    if attr.multiplicative:
        parts = " x ".join(f"{p.value:.2f}" for p in attr.parts)
        return f"x{attr.measured:.2f} = {parts} x {attr.remainder:.2f}"
    parts = " ".join(f"{p.name} {p.value:+.1f}" for p in attr.parts if abs(p.value) >= 0.05)
    return f"{attr.measured:+.1f} {attr.unit}: {parts}; rest {attr.remainder:+.1f}"


def largest(attr: Attribution) -> str:
    if attr.multiplicative:
        return max(attr.parts, key=lambda p: abs(math.log(p.value)) if p.value > 0 else 0).name
    return max(attr.parts, key=lambda p: abs(p.value)).name


SHARE = 0.15
"""Largest difference of a part's share of the measured difference between the runs."""


def shares(attr: Attribution) -> dict[str, float]:
    """Each part's share of the measured difference (of its logarithm, for a ratio)."""
    if attr.multiplicative:
        total = math.log(attr.measured) if attr.measured > 0 else math.nan
        return {p.name: (math.log(p.value) / total if p.value > 0 and total else math.nan)
                for p in attr.parts}
    return {p.name: p.value / attr.measured if attr.measured else math.nan for p in attr.parts}


def same_story(a: Attribution, b: Attribution) -> bool:
    """Every part's share within ``SHARE`` of the other run's (no "largest part": client
    and server often add the same, and which is ahead is chance)."""
    sa, sb = shares(a), shares(b)
    return all(abs(v - sb.get(k, math.nan)) <= SHARE for k, v in sa.items())


def agree(a: Attribution, b: Attribution) -> bool:
    floor = max(a.floor if not math.isnan(a.floor) else 0.0,
                b.floor if not math.isnan(b.floor) else 0.0)
    pb = {p.name: p.value for p in b.parts}
    for p in a.parts:
        other = pb.get(p.name, math.nan)
        if a.multiplicative:
            if not (p.value > 0 and other > 0) or abs(math.log(p.value / other)) > math.log1p(floor):
                return False
        elif abs(p.value - other) > floor:
            return False
    return largest(a) == largest(b)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs=2, type=Path)
    parser.add_argument("--workloads", default="rr,stream")
    args = parser.parse_args(argv)
    wanted = set(args.workloads.split(","))
    one, two = (breakdowns(r, wanted) for r in args.runs)
    agreed = story = differ = total = 0
    for key in sorted(set(one) & set(two)):
        where, workload, layer, quantity = key
        a, b = one[key], two[key]
        same, told = agree(a, b), same_story(a, b)
        agreed += same
        story += told
        differ += not (same or told)
        total += 1
        verdict = "agree" if same else "same story" if told else "DIFFER"
        print(f"{where} {workload} {layer} {quantity}: {verdict}\n"
              f"    run 1: {text(a)}\n    run 2: {text(b)}")
    print(f"\n{total} breakdowns: {agreed} agree within the runs' floors (the same largest part, "
          f"every part within the larger floor of the two); {story} tell the same story (every "
          f"part's share of the difference within {SHARE:.0%}); {differ} do neither")
    return 0


if __name__ == "__main__":
    sys.exit(main())
