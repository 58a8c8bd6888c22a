"""The ``vnetbench`` command line: a thin layer over the library.

    vnetbench run [SCENARIO] [--out DIR]    build, measure, report (default: the built-in comparison)
    vnetbench plan SCENARIO [--commands]    what a run would do and how long; touches nothing
    vnetbench doctor                        what this host can and cannot do, and why
    vnetbench clean                         remove what killed runs left behind
    vnetbench list                          layers and workloads
    vnetbench report RUN_DIR [--baseline L] (re)build a run's report, layers beside L (host)
    vnetbench compare RUN_A RUN_B           a gate: exit 1 on a regression or a broken run
                                            (--format text|markdown|junit for CI)
    vnetbench reproduce STUDY|--all|--list  rerun a seed study's pack, or list the studies
    vnetbench export RUN_DIR... --format F  csv, json or parquet
    vnetbench schema                        JSON Schema of scenario files
    vnetbench up [SCENARIO]                 build one lab and keep it (prints its nodes)
    vnetbench labs                          the kept labs: id, layer, nodes, age, keeper alive
    vnetbench exec NODE -- CMD              run CMD inside a node of the kept lab
    vnetbench down                          tear the kept lab down
    vnetbench --version

``run`` and ``plan`` take overrides of the scenario's data (``--layers``, ``--nodes``,
``--hosts``, ``--repeat``, ``--set KEY=VALUE``; ``up`` takes ``--set``), applied before it is
validated (``scenario_overrides``).

``--json`` (run, plan, doctor, list, compare, labs) prints one JSON document on stdout instead of
the text (progress and errors still go to stderr), with the same exit code.

Exit codes (docs/cli.md's table, checked by tests/integration/test_exit_codes.py): 0 the command
did what was asked (for ``compare``: the gate passed); 1 the command ran and found a failure
or could not do all of it (``compare``: a regression or a gate problem not allowed, see
``compare --help``; ``run``: failed trials, no trial ran, or a layer past a
scenario's ``thresholds``; ``doctor``: a missing
capability; ``clean --host``: a machine not reached); 2 bad input: every ``VnetbenchError``
(a damaged run directory, a bad scenario, an ``--out`` that is not a regular file, a new
name or an empty directory) is printed as one line ``vnetbench: error: ...``, never a
traceback, and argparse's usage errors (``up --nodes 0``) exit 2 too; 130 Ctrl-C; 143 SIGTERM
(``run`` tears the current lab down, marks the run incomplete and keeps every finished
trial, as for Ctrl-C); 141 stdout's
reader went away early (``| head``): output stops quietly. Built on
argparse rather than typer (the design guide's suggestion): ``vnetbench run`` is timed as a
whole by the lab-speed benchmark and typer's import alone cost ~70 ms of it. Each command
imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vnetbench.cli.history import add_history_command
from vnetbench.errors import VnetbenchError
from vnetbench.run.startup import leave, pause_gc, resume_gc
from vnetbench.signals import EXIT_SIGTERM, Terminated

if TYPE_CHECKING:
    from vnetbench.host.cleaned import CleanResult
    from vnetbench.scenario.overrides import Override

EXIT_BROKEN_PIPE = 141
"""Exit code when stdout's reader closed early: 128 + SIGPIPE, what a shell shows for a
process killed by the signal, so `set -o pipefail` never takes a cut-short gate for a pass."""


class Exit(Exception):
    """Leave with this exit code (after the command printed what it had to say)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def print_json(data: object) -> None:
    """``data`` as one strict JSON document (nan/inf refused: callers give None)."""
    print(json.dumps(data, indent=2, allow_nan=False))


def default_scenario_path() -> Path:
    return Path(__file__).resolve().parents[1] / "data" / "default.yaml"


def scenario_overrides(args: argparse.Namespace) -> list[Override]:
    """The ``--layers/--nodes/--hosts/--repeat/--set`` of ``run`` and ``plan``."""
    from vnetbench.scenario.overrides import option_overrides

    return option_overrides(layers=args.layers, nodes=args.nodes, hosts=args.hosts,
                            repeat=args.repeat, sets=args.set or ())


def add_override_options(p: argparse.ArgumentParser) -> None:
    """``run``'s and ``plan``'s overrides of the scenario's data (``scenario_overrides``)."""
    g = p.add_argument_group("overrides (applied to the scenario's data before it is "
                             "checked; a run records them in run.json)")
    g.add_argument("--layers", metavar="A,B", help="the layers to compare instead of the "
                   "scenario's, e.g. host,vxlan (a layer given options in the file keeps them)")
    g.add_argument("--nodes", metavar="N", help="node count, or a sweep: 2,4,8")
    g.add_argument("--hosts", metavar="H", help="emulated hosts, or a sweep: 1,2")
    g.add_argument("--repeat", metavar="N", help="repetitions (rounds)")
    g.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="set a scenario key (link.delay=10ms, pairing=off, "
                   "platform.quiet.wait=1s), a workload's option (rr.duration=2s) or a "
                   "layer's option (vxlan.vni=7); VALUE is YAML ([0ms,10ms] sweeps); "
                   "repeatable")


def cmd_run(args: argparse.Namespace) -> None:
    from vnetbench.provenance import gitinfo
    gitinfo.start()  # the fingerprint's git question, answered while the rest loads
    from vnetbench.backends.catalog import get_layer
    from vnetbench.backends.lab import require_root
    from vnetbench.backends.registry import needs_root
    from vnetbench.run.outdir import prepare_out, release_claim
    from vnetbench.run.runner import run_scenario
    from vnetbench.scenario.overrides import load_scenario_with

    sf = load_scenario_with(args.scenario or default_scenario_path(), scenario_overrides(args))
    if any(needs_root(get_layer(n)) for p in sf.points for n in p.scenario.layers):
        require_root()
    out = prepare_out(args.out, sf.name)
    try:
        outcome = run_scenario(sf, out, collect=not args.no_collect)
    except Terminated:
        print(f"vnetbench: terminated (SIGTERM); the finished trials are in {out}",
              file=sys.stderr)
        raise Exit(EXIT_SIGTERM) from None
    finally:
        release_claim(out)
    report = None
    builds = [s.value for s in outcome.samples if s.metric == "lab_build_s"]
    limits = None
    if sf.points[0].scenario.thresholds:  # judged before the report, which shows them
        from vnetbench.report.thresholds import judge_run

        limits = judge_run(outcome.run_dir)
    run = None
    if any("workload" in s.labels for s in outcome.samples):
        from vnetbench.report.html import build_report
        from vnetbench.results.store import load_run

        run = load_run(outcome.run_dir)  # once, for the summary, the report and --json
        if not args.json:
            from vnetbench.report.summary import summary_text

            print(summary_text(run))
        report = build_report(run)
    elif not sf.points[0].scenario.workloads and builds and not args.json:
        print(f"no workloads: built and tore down {len(builds)} lab(s), build time "
              f"{min(builds):.2f}-{max(builds):.2f} s")
    if args.json:
        from vnetbench.results.overview import run_overview
        from vnetbench.results.store import load_run

        print_json({**run_overview(run if run is not None else load_run(outcome.run_dir)),
                    "trials_done": outcome.trials_done, "trials_failed": outcome.trials_failed,
                    "lab_build_s": builds,
                    "thresholds": limits.to_dict() if limits is not None else None,
                    "report": str(Path(report).resolve()) if report else None})
    else:
        if limits is not None:
            print("\n".join(limits.lines()))
        print(f"results: {outcome.run_dir} ({outcome.trials_done} trials, "
              f"{outcome.trials_failed} failed, status {outcome.status})")
        if report:
            print(f"report: {report}")
    if args.history is not None and run is not None:
        from vnetbench.history.store import add_runs

        ((_, added),) = add_runs(args.history, [run])
        print(f"history: {'added to' if added else 'already in'} {args.history}",
              file=sys.stderr if args.json else sys.stdout)
    if outcome.trials_done == 0:  # every layer skipped (skip_unsupported): nothing was run
        print(f"vnetbench: no trial ran: every layer of {sf.path} was skipped on this host "
              "(see the lines above)", file=sys.stderr)
        raise Exit(1)
    if outcome.trials_failed or (limits is not None and not limits.passed):
        raise Exit(1)


def cmd_plan(args: argparse.Namespace) -> None:
    from vnetbench.cli.plan_summary import summarize
    from vnetbench.cli.planning import checked_layers, dry_runs
    from vnetbench.scenario.overrides import load_scenario_with

    sf = load_scenario_with(args.scenario, scenario_overrides(args))
    unsupported = checked_layers(sf)
    summary = summarize(sf, unsupported)
    runs = list(dry_runs(sf, unsupported)) if args.commands else []
    if args.json:
        print_json({"summary": summary.to_dict(), "plans": [dry.to_dict() for dry in runs]})
        return
    print(summary.text())
    if not args.commands:
        count = sum(len(p.scenario.layers) for p in sf.points)
        print(f"command lines of the {count} lab plan(s) (each layer at each sweep point): "
              "add --commands")
    for dry in runs:
        print(f"### {dry.title}")
        print(dry.text)


def cmd_doctor(args: argparse.Namespace) -> None:
    from vnetbench.cli.doctor import doctor_facts, doctor_text

    facts = doctor_facts()
    if args.json:
        print_json(facts)
    else:
        print(doctor_text(facts))
    if not facts["ok"]:
        raise Exit(1)


def _print_clean(result: CleanResult, nothing: str) -> None:
    """What cleaning machines or clusters removed (or ``nothing``); Exit(1) when one failed:
    it may still hold a killed run's lab or namespace."""
    if result.done or not result.failed:
        print("\n".join(result.done) if result.done else nothing)
    for line in result.failed:
        print(f"vnetbench: {line}", file=sys.stderr)
    if result.failed:
        raise Exit(1)


def cmd_clean(args: argparse.Namespace) -> None:
    from vnetbench.backends.lab import require_root
    from vnetbench.cli.clean import clean

    if args.host:  # a killed run's leftovers on real machines
        from vnetbench.backends.machines.cleanup import clean_hosts
        _print_clean(clean_hosts(args.host, args.identity, args.any_controller),
                     "nothing to clean on " + ", ".join(args.host))
        return
    if args.kubernetes:  # a killed run's namespaces in Kubernetes clusters
        from vnetbench.backends.kubernetes.cleanup import clean_clusters
        _print_clean(clean_clusters(args.kubernetes, args.kubeconfig),
                     "nothing to clean in " + ", ".join(args.kubernetes))
        return
    require_root()
    _print_clean(clean(), "nothing to clean")


def cmd_list(args: argparse.Namespace) -> None:
    from vnetbench.backends.catalog import LAYERS
    from vnetbench.workloads.registry import workload_models

    if args.json:
        print_json({
            "layers": [{"name": name, "summary": cls.summary,
                        "options": list(cls.options.model_fields)}
                       for name, cls in LAYERS.items()],
            "workloads": [{"name": name, "summary": (model.__doc__ or "").strip().split("\n")[0],
                           "options": [f.alias or n for n, f in model.model_fields.items()]}
                          for name, model in workload_models().items()]})
        return
    print("layers:")
    for name, cls in LAYERS.items():
        print(f"  {name:17} {cls.summary}")
    print("workloads:")
    for name, model in workload_models().items():
        print(f"  {name:10} options: {', '.join(model.model_fields)}")


def cmd_schema(args: argparse.Namespace) -> None:
    from vnetbench.scenario.schema import scenario_file_schema

    print(json.dumps(scenario_file_schema(), indent=2))


def cmd_report(args: argparse.Namespace) -> None:
    import difflib

    from vnetbench.results.store import load_run

    run = load_run(args.run_dir)  # a damaged run says so before the plotting libraries load
    layers = sorted({s.labels["layer"] for s in run.samples if s.labels.get("layer")})
    if args.baseline not in layers:
        near = difflib.get_close_matches(args.baseline, layers, n=1)
        raise VnetbenchError(
            f"--baseline {args.baseline}: run {args.run_dir} has no layer of that name"
            + (f" (did you mean {near[0]}?)" if near else "")
            + f"; it measured {', '.join(layers) or 'no layer'}")
    from vnetbench.report.html import build_report

    try:
        path = build_report(args.run_dir, baseline=args.baseline)
    except OSError as exc:  # a read-only run directory, a full disk
        where = f" ({exc.filename})" if exc.filename else ""
        raise VnetbenchError(f"cannot write the report of {args.run_dir}: "
                             f"{exc.strerror or exc}{where}") from exc
    print(f"report: {path}")


GATE_KINDS = ("missing", "failed", "incomplete", "collapsed", "unjudged")
"""``vnetbench compare --allow`` choices: ``results.compare.GATE_KINDS`` (not imported here, so
building the parser does not load numpy)."""

COMPARE_EPILOG = """\
compare is a gate that cannot pass a broken run. Besides a regression (a change beyond the
tolerance and the A/A noise floor, and significant), each of these fails it unless allowed
with --allow KIND (repeatable):
  missing     groups of A with no result in B (no failed trial of B explains them)
  failed      failed trials (trial_failed samples) in A or B
  incomplete  A or B with a status other than complete (killed, cut short, failed at a stage)
  collapsed   zero, nan or inf values where the other run had finite non-zero ones
  unjudged    groups with too few repetitions for any difference to be significant (3 vs 3
              or fewer), or no group in both runs
Every problem is printed as a line (FAIL or allowed), then always a summary line: how many
groups were judged and what failed the gate.

--metric PATTERN and --workload NAME (each repeatable) judge only the samples whose metric
matches a pattern (shell-style: 'rtt_p*_us') and whose workload is named; a metric named
this way is judged even if it is not a headline one. Failed trials and run status still
count. A filter that matches nothing in either run is bad input (exit 2), so a typo cannot
pass a gate by comparing nothing. --json prints the gate as one JSON document (passed,
exit_code, summary, problems, changes); --format markdown a CI job summary
(`>> $GITHUB_STEP_SUMMARY`), --format junit a JUnit XML report whose failures are exactly
what fails the gate; each with the same exit code.

exit codes (for CI: `vnetbench compare base/ new/ || fail`):
  0    the gate passed: no regression, and every problem found was allowed
  1    a regression, or a gate problem not allowed
  2    bad input: a run directory missing or damaged, a bad option, a filter matching nothing
  130  interrupted (Ctrl-C)
  141  stdout closed early (| head): output cut short, the verdict not given
"""


def cmd_compare(args: argparse.Namespace) -> None:
    from vnetbench.results.compare import SampleFilter, format_changes, gate

    if not 0.0 <= args.tolerance < float("inf"):
        raise VnetbenchError(f"--tolerance must be a finite number >= 0, got {args.tolerance}")
    only = SampleFilter(tuple(args.metric or ()), tuple(args.workload or ()))
    if args.json and args.format != "text":
        raise VnetbenchError(f"give --json or --format {args.format}, not both")
    result = gate(args.run_a, args.run_b, args.tolerance, allow=args.allow or (),
                  include_evidence=args.all_metrics, only=only)
    if args.json:
        print_json(result.to_dict())
        raise Exit(result.exit_code)
    if args.format != "text":
        from vnetbench.results.gate_formats import gate_junit, gate_markdown

        print(gate_markdown(result, str(args.run_a), str(args.run_b), args.tolerance, args.all)
              if args.format == "markdown" else gate_junit(result, str(args.run_a),
                                                           str(args.run_b)))
        raise Exit(result.exit_code)
    text = format_changes(result.changes, only_called=not args.all)
    if text:
        print(text)
    for line in [*result.problem_lines(), *result.note_lines()]:
        print(line)
    print(result.summary_line())
    if result.exit_code:
        raise Exit(result.exit_code)


def cmd_reproduce(args: argparse.Namespace) -> None:
    from vnetbench.studies import rerun
    from vnetbench.studies.model import all_studies, find_study

    if args.list:
        if (args.study or args.all or args.judge is not None or args.full or args.out
                or args.emulated or args.size is not None):
            raise VnetbenchError("--list takes no study and no other option (it lists every "
                                 "size)")
        from vnetbench.studies.model import study_listing

        print("\n".join(study_listing(all_studies().values())))
        return
    if args.all == bool(args.study):
        raise VnetbenchError("name one study (e.g. `vnetbench reproduce percona`) or --all "
                             "(`vnetbench reproduce --list` lists them)")
    size = rerun.reproduce_size(args.size, args.full)
    studies = ([find_study(args.study)] if args.study else
               sorted({s.id: s for s in all_studies().values()}.values(), key=lambda s: s.id))
    if args.judge is not None:
        rerun.judge_earlier(studies, args.judge, every=args.all)
        return
    from vnetbench.backends.lab import require_root

    for study in studies:  # every pack has the size before anything runs
        study.scenario_paths(size)
    require_root()
    try:
        rerun.reproduce(studies, size, Path(args.out) if args.out else None, args.emulated)
    except Terminated:
        raise Exit(EXIT_SIGTERM) from None


def cmd_export(args: argparse.Namespace) -> None:
    from vnetbench.results.index import export
    from vnetbench.scenario.schema import label_unit_kinds

    target = args.out or Path(f"samples.{args.format}")
    print(f"wrote {export(args.runs, args.format, target, unit_kinds=label_unit_kinds)}")


def cmd_up(args: argparse.Namespace) -> None:
    from vnetbench.backends.lab import require_root
    from vnetbench.cli.up import select_lab, start_keeper, up_text

    require_root()
    sets = args.set or ()
    select_lab(args.scenario, args.layer, args.nodes, args.hosts, sets)  # bad input: said here
    try:
        info = start_keeper(args.scenario, args.layer, args.nodes, args.hosts, sets)
    except Terminated:
        print("vnetbench: terminated (SIGTERM); the lab was torn down", file=sys.stderr)
        raise Exit(EXIT_SIGTERM) from None
    print(up_text(info))


def cmd_exec(args: argparse.Namespace) -> None:
    from vnetbench.backends.lab import require_root
    from vnetbench.cli.up import ExecFailed, exec_in

    require_root()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    try:
        exec_in(args.lab, args.node, argv)  # returns only on failure
    except ExecFailed as exc:
        print(f"vnetbench: error: {exc}", file=sys.stderr)
        raise Exit(exc.code) from None


def cmd_labs(args: argparse.Namespace) -> None:
    import time

    from vnetbench.cli.up import lab_entries, labs_text

    entries, now = lab_entries(), time.time()
    if args.json:
        print_json([e.to_dict(now) for e in entries])
    else:
        print(labs_text(entries, now))


def cmd_down(args: argparse.Namespace) -> None:
    from vnetbench.backends.lab import require_root
    from vnetbench.cli.up import down

    require_root()
    print("\n".join(down(args.lab)))


def count(text: str) -> int:
    """An argparse type: a whole number of at least 1 (0 is not read as "not given")."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: give at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    from vnetbench import __version__

    parser = argparse.ArgumentParser(
        prog="vnetbench", description="What does this virtual network layer cost my "
        "distributed system?")
    parser.add_argument("--version", action="version", version=f"vnetbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, fn: Callable[[argparse.Namespace], None],
                help_text: str, json_help: str | None = None) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(fn=fn, json=False)
        if json_help:
            p.add_argument("--json", action="store_true", help=json_help)
        return p

    _run_commands(command)
    _result_commands(command)
    _lab_commands(command)
    add_history_command(command, cmd_history)
    return parser


def cmd_history(args: argparse.Namespace) -> None:
    from vnetbench.cli.history import run_history

    code = run_history(args)
    if code:
        raise Exit(code)


Command = Callable[..., argparse.ArgumentParser]
"""Adds a subcommand: (name, function, help[, --json help]) -> its parser."""


def _run_commands(command: Command) -> None:
    """run, plan, doctor, clean, list, schema."""
    p = command("run", cmd_run, "build the lab(s), run the workloads, write results and report",
                "print a JSON summary (run, status, trials, headline medians per group, "
                "report path) instead of the text")
    p.add_argument("scenario", nargs="?", type=Path, help="scenario YAML (default: built-in)")
    p.add_argument("--out", help="output directory, new or empty (default "
                   "results/<time>-<name>-<random>)")
    p.add_argument("--no-collect", action="store_true", help="skip kernel counters")
    p.add_argument("--history", type=Path, metavar="STORE", help="also add the run to this "
                   "history store (made when absent; `vnetbench history`)")
    add_override_options(p)
    p = command("plan", cmd_plan, "what a run would do: labs, trials or interleaved sessions, "
                "an estimated time, skipped layers; the commands with --commands",
                "print it as JSON: summary (labs, trials, sessions, seconds, per sweep point) "
                "and, with --commands, plans (layer, hosts, nodes, sweep axes, plan lines)")
    p.add_argument("scenario", type=Path)
    p.add_argument("--commands", action="store_true", help="also print the command lines of "
                   "every lab (each layer at each sweep point), touching nothing")
    add_override_options(p)
    command("doctor", cmd_doctor, "what this host can and cannot do (root, kernel, tools)",
            "print the findings as JSON")
    p = command("clean", cmd_clean, "remove namespaces, processes, cgroups, files of killed runs")
    p.add_argument("--host", action="append", default=[], metavar="SSH",
                   help="clean this real machine instead (an ssh destination, as in a "
                        "scenario's hosts; repeat for several): runs the teardown every "
                        "killed run left there")
    p.add_argument("--identity", default=None, metavar="KEY",
                   help="private key for --host (default: your ssh config and agent)")
    p.add_argument("--any-controller", action="store_true",
                   help="with --host, also the runs another machine started there (by default "
                        "left: that machine may still be running them)")
    p.add_argument("--kubernetes", action="append", default=[], metavar="CONTEXT",
                   help="clean this Kubernetes cluster instead (a kubeconfig context; repeat "
                        "for several): deletes the namespaces of this machine's killed runs")
    p.add_argument("--kubeconfig", default=None, metavar="FILE",
                   help="kubeconfig for --kubernetes (default: $KUBECONFIG, ~/.kube/config)")
    command("list", cmd_list, "the layers and workloads this version knows",
            "print them as JSON (names, summaries, option keys)")
    command("schema", cmd_schema, "print the JSON Schema of scenario files")


def _result_commands(command: Command) -> None:
    """report, compare, reproduce, export."""
    p = command("report", cmd_report, "(re)build report.html for a run")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--baseline", default="host", metavar="LAYER",
                   help="the layer every other is set beside (default: host, the native "
                        "network); one the run measured")
    p = command("compare", cmd_compare, "per-metric change between two runs; exit 1 on a "
                "regression beyond the tolerance",
                "print the gate as JSON (passed, exit_code, summary, problems, changes)")
    p.add_argument("run_a", type=Path, help="baseline run directory")
    p.add_argument("run_b", type=Path, help="new run directory")
    p.add_argument("--tolerance", type=float, default=0.05, help="relative change tolerated")
    p.add_argument("--all", action="store_true", help="show unchanged metrics too")
    p.add_argument("--all-metrics", action="store_true",
                   help="judge every metric: the probe's own CPU seconds, min/max latencies "
                   "and collector evidence too (default: the headline figures)")
    p.add_argument("--metric", action="append", metavar="PATTERN",
                   help="judge only metrics matching this shell-style pattern, e.g. "
                   "'rtt_p*_us' (repeatable)")
    p.add_argument("--workload", action="append", metavar="NAME",
                   help="judge only this workload's samples, e.g. rr (repeatable)")
    p.add_argument("--format", choices=("text", "markdown", "junit"), default="text",
                   help="text (default); markdown, for a CI job summary (the changes as a "
                   "table, the problems, the summary line); junit, JUnit XML with one testcase "
                   "per compared group, a failure per regression and per gate problem not "
                   "allowed. The exit code is the same")
    p.add_argument("--allow", action="append", choices=GATE_KINDS, metavar="KIND",
                   help="let this kind of problem pass the gate (repeatable): "
                   + ", ".join(GATE_KINDS))
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = COMPARE_EPILOG
    p = command("reproduce", cmd_reproduce, "rerun a seed study's pack and set each finding "
                "beside the published figures, with a verdict")
    p.add_argument("study", nargs="?", help="study name or id (see --list)")
    p.add_argument("--list", action="store_true", help="list the studies: id, name, title "
                   "and the scenarios each runs at each size")
    p.add_argument("--all", action="store_true", help="every study, one after another")
    p.add_argument("--size", choices=["quick", "standard", "full"], default=None,
                   help="quick (default): sized for a small host; standard: the same labs "
                   "with the rounds, durations and data that resolve what quick cannot "
                   "(20 minutes to over an hour per study on 2 cores); full: the study's own "
                   "size (a big host)")
    p.add_argument("--full", action="store_true", help="the same as --size full")
    p.add_argument("--emulated", action="store_true",
                   help="also run the scenarios that need KVM (Hadoop in VM guests) when the "
                   "guests would run under TCG: measured and labelled emulated, never judged")
    p.add_argument("--out", help="parent directory of the runs (default results/)")
    p.add_argument("--judge", type=Path, metavar="RUN_DIR",
                   help="judge an existing run of the study's scenario instead of running it "
                   "(with --all: the directory an earlier `--all --out` filled)")
    p = command("export", cmd_export, "export samples (with labels) as csv, json or parquet")
    p.add_argument("runs", type=Path, nargs="+", help="run directories")
    p.add_argument("--format", choices=["csv", "json", "parquet"], default="csv")
    p.add_argument("--out", type=Path, help="output file (default samples.<format>)")


def _lab_commands(command: Command) -> None:
    """up, exec, labs, down (a lab kept between commands)."""
    p = command("up", cmd_up, "build one lab and keep it until `vnetbench down` (prints its "
                "nodes and how to enter them)")
    p.add_argument("scenario", nargs="?", type=Path, help="scenario YAML (its link, resources "
                   "and layer options; its workloads do not run)")
    p.add_argument("--layer", help="the layer (needed when the scenario lists several; "
                   "default without a scenario: bridge)")
    p.add_argument("--nodes", type=count, help="node count (picks a point of a nodes sweep; "
                   "default without a scenario: 2)")
    p.add_argument("--hosts", type=count, help="emulated hosts (picks a point of a hosts sweep; "
                   "default without a scenario: 1)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="set a key of the scenario (or of the lab the options describe) before "
                   "it is checked, as `run --set` does: link.delay=10ms, vxlan.vni=7, "
                   "resources.cpus=0.5; repeatable")
    p = command("exec", cmd_exec, "run a command inside a node (n0, n1, ... or a host's own "
                "stack h0, ...) of the kept lab; its exit status is passed through")
    p.add_argument("--lab", help="the kept lab's id (needed when several are up)")
    p.add_argument("node", help="n0, n1, ... or h0, h1, ...")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD", help="the command")
    command("labs", cmd_labs, "the labs `vnetbench up` keeps: id, name, layer, nodes, hosts, "
            "age, and whether their keeper is alive",
            "print them as JSON (id, name, layer, nodes, hosts, age_s, keeper, keeper_alive)")
    p = command("down", cmd_down, "tear the kept lab down (nothing of it is left)")
    p.add_argument("--lab", help="the kept lab's id (needed when several are up)")


def main(argv: Sequence[str] | None = None) -> int:
    # pydantic looks for plugins among every installed distribution's entry points the
    # first time it builds a model (~20 ms: importlib.metadata and a scan of site-packages);
    # vnetbench's models are its own input checks, with nothing for a plugin to observe
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    pause_gc()  # while the program loads (``startup``); a run resumes it once its lab is up
    try:
        return _main(argv)
    finally:
        resume_gc()


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.fn is not cmd_run:  # the others may allocate a lot (reports): collect as usual
        resume_gc()
    try:
        try:
            args.fn(args)
        finally:  # a closed pipe shows here, not as a traceback at interpreter exit
            sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (`vnetbench compare A B | head -1`): stop quietly; point stdout
        # at devnull so the interpreter's final flush cannot fail again (Python docs, signal)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exit as done:
        return done.code
    except VnetbenchError as exc:
        print(f"vnetbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("vnetbench: interrupted", file=sys.stderr)
        return 130
    except Terminated:  # a command without its own word for it: still one line
        print("vnetbench: terminated (SIGTERM)", file=sys.stderr)
        return EXIT_SIGTERM
    return 0


def entry_point() -> None:
    leave(main())  # everything is written by now: skip the interpreter's teardown
