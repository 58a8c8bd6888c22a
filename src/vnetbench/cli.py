"""The ``vnetbench`` command line: a thin layer over the library.

    vnetbench run [SCENARIO] [--out DIR]    build, measure, report (default: the built-in comparison)
    vnetbench plan SCENARIO                 print what would be built, touching nothing
    vnetbench doctor                        what this host can and cannot do, and why
    vnetbench clean                         remove what killed runs left behind
    vnetbench list                          layers and workloads
    vnetbench report RUN_DIR                (re)build a run's report
    vnetbench compare RUN_A RUN_B           changes between two runs; exit 1 on a regression
    vnetbench export RUN_DIR... --format F  csv, json or parquet
    vnetbench schema                        JSON Schema of scenario files

Every ``VnetbenchError`` is printed as one line and exits 2; Ctrl-C exits 130. Built on
argparse rather than typer (the design guide's suggestion): ``vnetbench run`` is timed as a
whole by the lab-speed benchmark and typer's import alone cost ~70 ms of it. Each command
imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from vnetbench.errors import VnetbenchError


class Exit(Exception):
    """Leave with this exit code (after the command printed what it had to say)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def default_scenario_path() -> Path:
    return Path(__file__).resolve().parent / "data" / "default.yaml"


def cmd_run(args: argparse.Namespace) -> None:
    from vnetbench.lab import require_root
    from vnetbench.runner import run_scenario
    from vnetbench.scenario import load_scenario

    sf = load_scenario(args.scenario or default_scenario_path())
    require_root()
    out = args.out or Path("results") / f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}-{sf.name}"
    outcome = run_scenario(sf, out, collect=not args.no_collect)
    report = None
    if any("workload" in s.labels for s in outcome.samples):
        from vnetbench.report.html import build_report
        from vnetbench.report.tables import summary_text

        print(summary_text(outcome.run_dir))
        report = build_report(outcome.run_dir)
    elif not sf.points[0].scenario.workloads:
        builds = [s.value for s in outcome.samples if s.metric == "lab_build_s"]
        if builds:
            print(f"no workloads: built and tore down {len(builds)} lab(s), build time "
                  f"{min(builds):.2f}-{max(builds):.2f} s")
    print(f"results: {outcome.run_dir} ({outcome.trials_done} trials, "
          f"{outcome.trials_failed} failed, status {outcome.status})")
    if report:
        print(f"report: {report}")
    if outcome.trials_failed:
        raise Exit(1)


def cmd_plan(args: argparse.Namespace) -> None:
    from vnetbench.planning import dry_run_plans
    from vnetbench.scenario import load_scenario

    for title, text in dry_run_plans(load_scenario(args.scenario)):
        print(f"### {title}")
        print(text)


def cmd_doctor(args: argparse.Namespace) -> None:
    from vnetbench.doctor import doctor_report

    text, ok = doctor_report()
    print(text)
    if not ok:
        raise Exit(1)


def cmd_clean(args: argparse.Namespace) -> None:
    from vnetbench.clean import clean
    from vnetbench.lab import require_root

    require_root()
    done = clean()
    print("\n".join(done) if done else "nothing to clean")


def cmd_list(args: argparse.Namespace) -> None:
    from vnetbench.layers.registry import LAYERS
    from vnetbench.workloads.registry import workload_models

    print("layers:")
    for name, cls in LAYERS.items():
        print(f"  {name:17} {cls.summary}")
    print("workloads:")
    for name, model in workload_models().items():
        print(f"  {name:10} options: {', '.join(model.model_fields)}")


def cmd_schema(args: argparse.Namespace) -> None:
    from vnetbench.scenario import scenario_json_schema

    print(json.dumps(scenario_json_schema(), indent=2))


def cmd_report(args: argparse.Namespace) -> None:
    from vnetbench.report.html import build_report

    print(f"report: {build_report(args.run_dir)}")


def cmd_compare(args: argparse.Namespace) -> None:
    from vnetbench.results.compare import compare, exit_code, format_changes, summary_line

    changes = compare(args.run_a, args.run_b, args.tolerance,
                      include_evidence=args.all_metrics)
    text = format_changes(changes, only_called=not args.all)
    if text:
        print(text)
    print(summary_line(changes))
    code = exit_code(changes)
    if code:
        raise Exit(code)


def cmd_export(args: argparse.Namespace) -> None:
    from vnetbench.results.index import export

    target = args.out or Path(f"samples.{args.format}")
    print(f"wrote {export(args.runs, args.format, target)}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vnetbench", description="What does this virtual network layer cost my "
        "distributed system?")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, fn: Callable[[argparse.Namespace], None],
                help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(fn=fn)
        return p

    p = command("run", cmd_run, "build the lab(s), run the workloads, write results and report")
    p.add_argument("scenario", nargs="?", type=Path, help="scenario YAML (default: built-in)")
    p.add_argument("--out", type=Path, help="output directory (default results/<time>-<name>)")
    p.add_argument("--no-collect", action="store_true", help="skip kernel counters")
    p = command("plan", cmd_plan, "print what would be built for every layer and sweep point")
    p.add_argument("scenario", type=Path)
    command("doctor", cmd_doctor, "what this host can and cannot do (root, kernel, tools)")
    command("clean", cmd_clean, "remove namespaces, processes, cgroups, files of killed runs")
    command("list", cmd_list, "the layers and workloads this version knows")
    command("schema", cmd_schema, "print the JSON Schema of scenario files")
    p = command("report", cmd_report, "(re)build report.html for a run")
    p.add_argument("run_dir", type=Path)
    p = command("compare", cmd_compare, "per-metric change between two runs; exit 1 on a "
                "regression beyond the tolerance")
    p.add_argument("run_a", type=Path, help="baseline run directory")
    p.add_argument("run_b", type=Path, help="new run directory")
    p.add_argument("--tolerance", type=float, default=0.05, help="relative change tolerated")
    p.add_argument("--all", action="store_true", help="show unchanged metrics too")
    p.add_argument("--all-metrics", action="store_true",
                   help="judge collector evidence too (per-core CPU, per-device counters)")
    p = command("export", cmd_export, "export samples (with labels) as csv, json or parquet")
    p.add_argument("runs", type=Path, nargs="+", help="run directories")
    p.add_argument("--format", choices=["csv", "json", "parquet"], default="csv")
    p.add_argument("--out", type=Path, help="output file (default samples.<format>)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.fn(args)
    except Exit as done:
        return done.code
    except VnetbenchError as exc:
        print(f"vnetbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("vnetbench: interrupted", file=sys.stderr)
        return 130
    return 0


def entry_point() -> None:
    sys.exit(main())
