"""``vnetbench reproduce`` end to end: run each study's packs of a size (those that need KVM
only where guests get it) and judge them, or judge runs made earlier; the verdicts, the
reports and, for several studies, one table of every finding. The command line only checks
its arguments and calls these."""

from __future__ import annotations

import sys
from pathlib import Path

from vnetbench.errors import VnetbenchError
from vnetbench.signals import Terminated
from vnetbench.studies.judgement import Judgement
from vnetbench.studies.model import Size, Study
from vnetbench.studies.reproduce import (
    markdown_table,
    run_dirs_of,
    runs_of_study,
    verdict_lines,
    write_reproduction,
)


def reproduce_size(size: Size | None, full: bool) -> Size:
    """The size ``reproduce`` runs: ``--size`` (default quick), ``--full`` being ``--size
    full``; VnetbenchError when the two disagree."""
    if full and size not in (None, "full"):
        raise VnetbenchError(f"--full means --size full, which disagrees with --size {size}; "
                             "give one of them")
    return "full" if full else size or "quick"


def kvm_scenarios(study: Study, size: Size, emulated: bool) -> list[Path]:
    """The study's scenarios of ``size`` that need KVM, when this host's guests get it (or
    ``emulated``); else none, and one line per scenario saying why."""
    paths = study.kvm_scenario_paths(size)
    if not paths or emulated:
        return paths
    from vnetbench.backends.vm.accel import choose_accel

    try:
        choice = choose_accel()
    except VnetbenchError as exc:
        why = f"no VM guest boots here ({exc})"
    else:
        if choice.accel == "kvm":
            return paths
        why = (f"VM guests here run under TCG ({choice.reason}), far slower than at "
               "hardware speed")
    for path in paths:
        print(f"vnetbench: study {study.id}: not running {path.name}: {why}, so its findings "
              "are not judged; a host with working KVM runs and judges them (--emulated "
              "measures them here anyway, unjudged)", file=sys.stderr)
    return []


def judge_earlier(studies: list[Study], where: Path, every: bool) -> None:
    """Judge runs made earlier: one study's run directory (or the directory of its runs),
    or (``every``) the parent an earlier ``--all --out`` filled. Every run is checked to be
    its study's before anything is written."""
    found = []
    for study in studies:
        mine = where / f"s{study.id}-{study.name}" if every else where
        run_dirs = run_dirs_of(mine)
        if not run_dirs:
            if every:
                print(f"vnetbench: no run of study {study.id} in {where}", file=sys.stderr)
                continue
            raise VnetbenchError(f"--judge {mine}: no run there (a run directory holds "
                                 "run.json; a pack of several scenarios, a directory of such "
                                 "runs)")
        runs_of_study(study, run_dirs)
        found.append((study, run_dirs))
    judged: list[tuple[Study, Judgement]] = []
    for study, run_dirs in found:
        judged += [(study, j) for j in _judged(study, run_dirs)]
    if every:
        print("\n".join(markdown_table(judged)))


def reproduce(studies: list[Study], size: Size, out: Path | None, emulated: bool) -> None:
    """Run every study's packs of ``size`` (into ``out/s<id>-<name>``, else results/) and
    judge each study as soon as its runs end; Terminated (after one line saying where the
    finished trials are) when SIGTERM stops a run."""
    from vnetbench.run.outdir import prepare_out, release_claim
    from vnetbench.run.runner import run_scenario
    from vnetbench.scenario.sweep import load_scenario

    rows: list[tuple[Study, Judgement]] = []
    for study in studies:
        files = [load_scenario(path)
                 for path in [*study.scenario_paths(size), *kvm_scenarios(study, size, emulated)]]
        label = f"s{study.id}-{study.name}"
        parent = prepare_out(str(out / label) if out else None,
                             files[0].name if len(files) == 1 else label)
        run_dirs = []
        try:
            for sf in files:
                run_out = parent if len(files) == 1 else prepare_out(parent / sf.name, sf.name)
                print(f"reproducing study {study.id} ({study.name}) from {sf.path} into "
                      f"{run_out}", file=sys.stderr)
                try:
                    run_dirs.append(run_scenario(sf, run_out).run_dir)
                except Terminated:
                    print(f"vnetbench: terminated (SIGTERM) while reproducing study {study.id}; "
                          f"the finished trials are in {run_out}", file=sys.stderr)
                    raise
                finally:
                    release_claim(run_out)
        finally:
            release_claim(parent)
        rows += [(study, j) for j in _judged(study, run_dirs)]
    if len(studies) > 1:
        print("\n".join(markdown_table(rows)))


def _judged(study: Study, run_dirs: list[Path]) -> list[Judgement]:
    """Judge ``study`` on its runs, write its reproduction and say the verdicts."""
    judgements, reports = write_reproduction(study, run_dirs)
    print("\n".join(verdict_lines(study, judgements)))
    print("\n".join(f"report: {r}" for r in reports))
    return judgements
