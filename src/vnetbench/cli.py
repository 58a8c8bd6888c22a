"""The ``vnetbench`` command line: a thin layer over the library (typer).

    vnetbench run [SCENARIO] [--out DIR]    build, measure, report (default: the built-in comparison)
    vnetbench plan SCENARIO                 print what would be built, touching nothing
    vnetbench doctor                        what this host can and cannot do, and why
    vnetbench clean                         remove what killed runs left behind
    vnetbench list                          layers and workloads
    vnetbench report RUN_DIR                (re)build a run's report
    vnetbench compare RUN_A RUN_B           changes between two runs; non-zero on regression
    vnetbench export RUN_DIR... --format F  csv, json or parquet
    vnetbench schema                        JSON Schema of scenario files

Every ``VnetbenchError`` is printed as one line and exits 2; Ctrl-C exits 130.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from functools import wraps
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from vnetbench.errors import VnetbenchError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="What does this virtual network layer cost my distributed system?")
F = TypeVar("F", bound=Callable[..., Any])


def friendly(fn: F) -> F:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except VnetbenchError as exc:
            typer.echo(f"vnetbench: error: {exc}", err=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            typer.echo("vnetbench: interrupted", err=True)
            raise typer.Exit(130) from None
    return wrapper  # type: ignore[return-value]


def default_scenario_path() -> Path:
    return Path(str(resources.files("vnetbench") / "data" / "default.yaml"))


@app.command()
@friendly
def run(
    scenario: Annotated[Path | None, typer.Argument(help="scenario YAML (default: built-in)")] = None,
    out: Annotated[Path | None, typer.Option(help="output directory (default results/<id>)")] = None,
    no_collect: Annotated[bool, typer.Option(help="skip kernel counters")] = False,
) -> None:
    """Build the lab(s), run the workloads, write results and the report."""
    from vnetbench.lab import require_root
    from vnetbench.runner import run_scenario
    from vnetbench.scenario import load_scenario

    sf = load_scenario(scenario or default_scenario_path())
    require_root()
    out = out or Path("results") / f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}-{sf.name}"
    outcome = run_scenario(sf, out, collect=not no_collect)
    workload_samples = [s for s in outcome.samples if "workload" in s.labels]
    report = None
    if workload_samples:
        _print_summary(outcome.run_dir)
        report = _build_report(outcome.run_dir)
    elif not sf.points[0].scenario.workloads:
        builds = [s.value for s in outcome.samples if s.metric == "lab_build_s"]
        if builds:
            typer.echo(f"no workloads: built and tore down {len(builds)} lab(s), build time "
                       f"{min(builds):.2f}-{max(builds):.2f} s")
    typer.echo(f"results: {outcome.run_dir} ({outcome.trials_done} trials, "
               f"{outcome.trials_failed} failed, status {outcome.status})")
    if report:
        typer.echo(f"report: {report}")
    if outcome.trials_failed:
        raise typer.Exit(1)


def _print_summary(run_dir: Path) -> None:
    try:
        from vnetbench.report.tables import summary_text
    except ImportError:
        return
    typer.echo(summary_text(run_dir))


def _build_report(run_dir: Path) -> Path | None:
    try:
        from vnetbench.report.html import build_report
    except ImportError:
        return None
    return build_report(run_dir)


@app.command()
@friendly
def plan(scenario: Annotated[Path, typer.Argument(help="scenario YAML")]) -> None:
    """Print what would be built for every layer and sweep point, touching nothing."""
    from vnetbench.planning import dry_run_plans
    from vnetbench.scenario import load_scenario

    for title, text in dry_run_plans(load_scenario(scenario)):
        typer.echo(f"### {title}")
        typer.echo(text)


@app.command()
@friendly
def doctor() -> None:
    """Say what this host can and cannot do (root, kernel features, tools) and why."""
    from vnetbench.doctor import doctor_report

    text, ok = doctor_report()
    typer.echo(text)
    if not ok:
        raise typer.Exit(1)


@app.command()
@friendly
def clean() -> None:
    """Remove namespaces, processes, cgroups and files left by killed runs."""
    from vnetbench.clean import clean as do_clean
    from vnetbench.lab import require_root

    require_root()
    done = do_clean()
    typer.echo("\n".join(done) if done else "nothing to clean")


@app.command("list")
def list_() -> None:
    """The layers and workloads this version knows."""
    from vnetbench.layers.registry import LAYERS
    from vnetbench.workloads.registry import workload_models

    typer.echo("layers:")
    for name, cls in LAYERS.items():
        typer.echo(f"  {name:10} {cls.summary}")
    typer.echo("workloads:")
    for name, model in workload_models().items():
        typer.echo(f"  {name:10} options: {', '.join(model.model_fields)}")


@app.command()
@friendly
def schema() -> None:
    """Print the JSON Schema of scenario files (for editors)."""
    from vnetbench.scenario import scenario_json_schema

    typer.echo(json.dumps(scenario_json_schema(), indent=2))


@app.command()
@friendly
def report(run_dir: Annotated[Path, typer.Argument(help="a run's output directory")]) -> None:
    """(Re)build report.html for a run."""
    path = _build_report(run_dir)
    if path is None:
        raise VnetbenchError("the report module is not available in this installation")
    typer.echo(f"report: {path}")


@app.command()
@friendly
def compare(
    run_a: Annotated[Path, typer.Argument(help="baseline run directory")],
    run_b: Annotated[Path, typer.Argument(help="new run directory")],
    tolerance: Annotated[float, typer.Option(help="relative change tolerated (0.05 = 5%)")] = 0.05,
    all_metrics: Annotated[bool, typer.Option("--all", help="show unchanged metrics too")] = False,
) -> None:
    """Per metric: the change, its interval, significance; exit 1 on a regression."""
    from vnetbench.results.compare import compare as do_compare
    from vnetbench.results.compare import exit_code, format_changes

    changes = do_compare(run_a, run_b, tolerance)
    typer.echo(format_changes(changes, only_called=not all_metrics))
    code = exit_code(changes)
    if code:
        raise typer.Exit(code)


@app.command()
@friendly
def export(
    runs: Annotated[list[Path], typer.Argument(help="run directories")],
    fmt: Annotated[str, typer.Option("--format", help="csv, json or parquet")] = "csv",
    out: Annotated[Path | None, typer.Option(help="output file")] = None,
) -> None:
    """Export samples of one or more runs (with their labels) as csv, json or parquet."""
    from vnetbench.results.index import export as do_export

    target = out or Path(f"samples.{fmt}")
    typer.echo(f"wrote {do_export(runs, fmt, target)}")


def main() -> None:
    app(prog_name="vnetbench")


if __name__ == "__main__":
    main()
