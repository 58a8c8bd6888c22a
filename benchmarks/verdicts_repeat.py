"""Do the studies' verdicts repeat? Two ``vnetbench reproduce --all`` runs judged side by side
(or one run's table alone).

    vnetbench reproduce --all --out A && vnetbench reproduce --all --out B
    python3 benchmarks/verdicts_repeat.py A B [--markdown]
    python3 benchmarks/verdicts_repeat.py A [--markdown]

For every finding of every study, each run's verdict (``agrees``, ``contradicts``, ``not
comparable``, ``set by the lab``), the rule that decided it and whether the run could have
produced the opposite verdict (``Judgement.could_fail``), its figure and the smallest ratio
the run could resolve for it. Prints how many verdicts are identical, how many went from
agrees to contradicts or back (the issue's limit: none), and how many findings were judged by
a rule that could have failed in both runs. ``--markdown`` prints the table the README and
docs/measurements.md carry.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from vnetbench.studies.judgement import Judgement
from vnetbench.studies.model import Study, all_studies
from vnetbench.studies.reproduce import compared, judge_runs, run_dirs_of

JUDGED = ("agrees", "contradicts")


def judged(parent: Path) -> dict[tuple[str, str], tuple[Study, Judgement]]:
    """(study id, finding id) -> its judgement, for every study with runs under ``parent``."""
    out: dict[tuple[str, str], tuple[Study, Judgement]] = {}
    studies = sorted({s.id: s for s in all_studies().values()}.values(), key=lambda s: s.id)
    for study in studies:
        dirs = run_dirs_of(parent / f"s{study.id}-{study.name}")
        if not dirs:
            print(f"no run of study {study.id} under {parent}", file=sys.stderr)
            continue
        for j in judge_runs(study, dirs):
            out[(study.id, j.finding.id)] = (study, j)
    return out


def resolves(j: Judgement) -> str:
    return "-" if math.isnan(j.resolvable) else f"x{j.resolvable:.2f}"


def cut(text: str, most: int) -> str:
    text = text.replace("|", "/")
    return text if len(text) <= most else text[:most - 3] + "..."


def counts(rows: dict[tuple[str, str], tuple[Study, Judgement]]) -> str:
    """``14 agrees, 7 contradicts, ...; 21 could have failed`` for one run."""
    count = {v: sum(1 for _, j in rows.values() if j.verdict == v) for v in
             ("agrees", "contradicts", "not comparable", "set by the lab")}
    return (", ".join(f"{n} {v}" for v, n in count.items())
            + f"; {sum(1 for _, j in rows.values() if j.could_fail)} could have failed")


def could_text(ja: Judgement, jb: Judgement) -> str:
    """``, could fail in A and B`` (or in A, in B; nothing when in neither)."""
    runs = [name for name, j in (("A", ja), ("B", jb)) if j.could_fail]
    return f", could fail in {' and '.join(runs)}" if runs else ""


def one(a: dict[tuple[str, str], tuple[Study, Judgement]], markdown: bool) -> None:
    if markdown:
        print("| study | finding (source) | published | ours | resolves | rule | verdict |")
        print("|---|---|---|---|---|---|---|")
        for study, j in a.values():
            print(f"| {study.id} | {j.finding.id} ({cut(j.finding.source, 40)}) | "
                  f"{cut(j.published, 60)} | {j.ours} {compared(j)} | {resolves(j)} | "
                  f"{j.rule}{', could fail' if j.could_fail else ''} | **{j.verdict}**: "
                  f"{cut(j.why, 160)} |")
        print()
    print(f"{len(a)} findings: {counts(a)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="one or two --out directories")
    parser.add_argument("--markdown", action="store_true", help="print the table too")
    args = parser.parse_args(argv)
    if len(args.runs) > 2:
        parser.error("give one or two --out directories")
    a = judged(args.runs[0])
    if len(args.runs) == 1:
        one(a, args.markdown)
        return 0
    b = judged(args.runs[1])
    keys = [k for k in a if k in b]
    same = [k for k in keys if a[k][1].verdict == b[k][1].verdict]
    flips = [k for k in keys if {a[k][1].verdict, b[k][1].verdict} == set(JUDGED)]
    could_fail = [k for k in keys if a[k][1].could_fail and b[k][1].could_fail]
    if args.markdown:
        print("| study | finding (source) | published | ours, run A / run B | resolves | rule | "
              "verdict A | verdict B |")
        print("|---|---|---|---|---|---|---|---|")
        for k in keys:
            study, ja = a[k]
            jb = b[k][1]
            print(f"| {study.id} | {ja.finding.id} ({cut(ja.finding.source, 40)}) | "
                  f"{cut(ja.published, 60)} | {ja.ours} / {jb.ours} {compared(ja)} | "
                  f"{resolves(ja)} / {resolves(jb)} | {ja.rule}{could_text(ja, jb)} | "
                  f"**{ja.verdict}** | **{jb.verdict}** |")
        print()
    for k in keys:
        if k not in same:
            print(f"changed: {k[0]} {k[1]}: {a[k][1].verdict} ({a[k][1].ours}) -> "
                  f"{b[k][1].verdict} ({b[k][1].ours}): {b[k][1].why}")
    print(f"{len(keys)} findings: {len(same)} verdicts identical ({len(same) / len(keys):.0%}), "
          f"{len(flips)} between agrees and contradicts; run A: {counts(a)}; run B: "
          f"{counts(b)}; {len(could_fail)} judged by a rule that could have failed in both runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
