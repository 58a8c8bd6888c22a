"""The compare gate: a broken run B (or A) fails it by default, each kind can be allowed.

Runs are copies of the recorded ``run_layers`` (7 repetitions of 4 layers x 2 workloads,
16 main-metric groups), damaged the way real runs break: every trial failed, every value 0 or
nan, one repetition, a layer missing, a killed run, one failed trial.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vnetbench.cli import main as cli
from vnetbench.results.compare import GATE_KINDS, Gate, compare, format_changes, gate
from vnetbench.results.model import Sample

EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "evidence"
GOOD = EVIDENCE / "run_layers"
N_GROUPS = 16  # the main-metric groups of run_layers (compare's default)

Line = dict[str, Any]


def _copy_run(dst: Path, *, rewrite: Callable[[list[Line]], list[Line]] | None = None,
              src: Path = GOOD, **meta: Any) -> Path:
    """A copy of a recorded run with its samples rewritten and run.json fields replaced."""
    shutil.copytree(src, dst)
    if rewrite is not None:
        path = dst / "samples.jsonl"
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        path.write_text("".join(json.dumps(d) + "\n" for d in rewrite(lines)))
    if meta:
        run_json = dst / "run.json"
        run_json.write_text(json.dumps({**json.loads(run_json.read_text()), **meta}, indent=2))
    return dst


def _workload(d: Line) -> bool:
    return not (set(d["labels"]) & {"netns", "device", "cpu", "source", "cgroup"})


def _all_failed(lines: list[Line]) -> list[Line]:
    """What the runner writes when every trial fails at build: one marker per trial."""
    seen: dict[str, Line] = {}
    for d in lines:
        labels = {k: v for k, v in d["labels"].items()
                  if k in {"layer", "nodes", "hosts", "repetition", "trial"}}
        seen.setdefault(labels["trial"], {"metric": "trial_failed", "value": 1.0, "unit": "count",
                                          "labels": {**labels, "stage": "build"}, "t_ns": 1})
    return list(seen.values())


def _values(value: float) -> Callable[[list[Line]], list[Line]]:
    def rewrite(lines: list[Line]) -> list[Line]:
        return [{**d, "value": value} if _workload(d) else d for d in lines]
    return rewrite


def _one_repetition(lines: list[Line]) -> list[Line]:
    return [d for d in lines if d["labels"].get("repetition") == "0"]


def _without_layer(layer: str) -> Callable[[list[Line]], list[Line]]:
    def rewrite(lines: list[Line]) -> list[Line]:
        return [d for d in lines if d["labels"].get("layer") != layer]
    return rewrite


def _one_failed_trial(lines: list[Line]) -> list[Line]:
    """An 8th repetition of bridge that failed in its workload (the 7 others are whole)."""
    return [*lines, {"metric": "trial_failed", "value": 1.0, "unit": "count", "t_ns": 1,
                     "labels": {"layer": "bridge", "nodes": "2", "hosts": "2",
                                "repetition": "7", "trial": "99", "stage": "workload rr"}}]


def _kinds(result: Gate) -> set[str]:
    return {p.kind for p in result.problems}


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = cli.main(["compare", *args])
    out, err = capsys.readouterr()
    assert not err
    return code, out.splitlines()


# ---- a clean pair ------------------------------------------------------------------------------

def test_a_clean_pair_passes(capsys: pytest.CaptureFixture[str]) -> None:
    result = gate(GOOD, GOOD)
    assert result.passed and result.exit_code == 0 and not result.problems
    assert result.summary_line().startswith(f"gate passed: {N_GROUPS} of {N_GROUPS} groups judged")
    code, lines = _cli(capsys, str(GOOD), str(GOOD))
    assert code == 0
    assert lines == [result.summary_line()]  # nothing called: the summary line alone


def test_a_regression_fails_and_cannot_be_allowed(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = _cli(capsys, str(GOOD), str(EVIDENCE / "run_layers_b"),
                       *[f"--allow={kind}" for kind in GATE_KINDS])
    assert code == 1
    assert "REGRESSION" in lines[0]
    assert lines[-1].startswith("gate FAILED:") and "regression(s)" in lines[-1].split(
        "failed by:")[1]


# ---- each kind fails by default and passes when allowed -----------------------------------------

CASES: dict[str, tuple[dict[str, Any], set[str], list[str]]] = {
    # name: (how B is made, the problems it must raise, what lets it pass)
    "all-failed": ({"rewrite": _all_failed, "status": "failed", "failing_stage": "trials"},
                   {"failed", "unjudged"}, ["failed", "unjudged"]),
    "all-zero": ({"rewrite": _values(0.0)}, {"collapsed"}, ["collapsed"]),
    "all-nan": ({"rewrite": _values(math.nan)}, {"collapsed"}, ["collapsed"]),
    "inf": ({"rewrite": _values(math.inf)}, {"collapsed"}, ["collapsed"]),
    "missing-layer": ({"rewrite": _without_layer("wireguard")}, {"missing"}, ["missing"]),
    "incomplete": ({"status": "incomplete"}, {"incomplete"}, ["incomplete"]),
    "still-running": ({"status": "running", "finished": None}, {"incomplete"}, ["incomplete"]),
    "failed-at-build": ({"status": "failed", "failing_stage": "build"}, {"incomplete"},
                        ["incomplete"]),
    "one-failed-trial": ({"rewrite": _one_failed_trial, "status": "failed",
                          "failing_stage": "trials"}, {"failed"}, ["failed"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_broken_b_fails_the_gate_until_allowed(case: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    how, kinds, allow = CASES[case]
    b = _copy_run(tmp_path / "b", **how)
    result = gate(GOOD, b)
    assert _kinds(result) == kinds
    assert not result.passed and result.exit_code == 1
    code, lines = _cli(capsys, str(GOOD), str(b))
    assert code == 1
    summary = lines[-1]
    assert summary.startswith("gate FAILED: ") and " groups judged" in summary
    for kind in kinds:
        assert f"[--allow {kind}]" in summary
        assert any(line.startswith(f"FAIL [{kind}] ") for line in lines)
    # allowing all but one of the kinds is not enough
    for left_out in allow:
        partial = [f"--allow={k}" for k in allow if k != left_out]
        assert _cli(capsys, str(GOOD), str(b), *partial)[0] == 1
    code, lines = _cli(capsys, str(GOOD), str(b), *[f"--allow={k}" for k in allow])
    assert code == 0, lines
    assert lines[-1].startswith("gate passed: ") and "; allowed: " in lines[-1]
    assert any(line.startswith("allowed [") for line in lines)


def test_all_failed_b_says_what_happened(tmp_path: Path) -> None:
    b = _copy_run(tmp_path / "b", rewrite=_all_failed, status="failed", failing_stage="trials")
    result = gate(GOOD, b)
    assert result.changes == []
    (failed,) = [p for p in result.problems if p.kind == "failed"]
    assert "56 of 56 trial(s) failed (at build: 56" in failed.message
    assert f"so {N_GROUPS} group(s) of A have no result in B" in failed.message
    assert "status failed" in failed.message and str(b) in failed.message
    summary = result.summary_line()
    assert summary.startswith("gate FAILED: 0 of 0 groups judged")
    assert "56 failed trial(s) in B [--allow failed]" in summary
    assert "nothing compared [--allow unjudged]" in summary


def test_collapsed_groups_are_shown_not_same(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    b = _copy_run(tmp_path / "b", rewrite=_values(0.0))
    result = gate(GOOD, b)
    assert all(c.collapsed and c.verdict == "COLLAPSED" for c in result.changes)
    assert len(result.changes) == N_GROUPS
    assert "B: 7 of 7 values zero" in result.changes[0].describe()
    assert result.summary_line().startswith(f"gate FAILED: 0 of {N_GROUPS} groups judged")
    assert f"{N_GROUPS} collapsed" in result.summary_line()
    _, lines = _cli(capsys, str(GOOD), str(b))
    table = [line for line in lines if "COLLAPSED" in line]
    assert len(table) == N_GROUPS and not [line for line in lines if line.endswith(" same")]
    nan = gate(GOOD, _copy_run(tmp_path / "nan", rewrite=_values(math.nan)))
    assert "B: 7 of 7 values nan" in nan.changes[0].collapse


def test_a_broken_baseline_is_named(tmp_path: Path) -> None:
    a = _copy_run(tmp_path / "a", status="incomplete")
    result = gate(a, GOOD)
    (problem,) = result.problems
    assert problem.kind == "incomplete" and problem.message.startswith(f"A ({a}): status "
                                                                       "incomplete")
    assert "A incomplete [--allow incomplete]" in result.summary_line()
    # a zero-filled baseline is a collapse too (the ratio xnan would say nothing)
    zeros = gate(_copy_run(tmp_path / "z", rewrite=_values(0.0)), GOOD)
    assert _kinds(zeros) == {"collapsed"}
    assert zeros.changes[0].collapse.startswith("A: 7 of 7 values zero")


def test_truncated_run_is_incomplete(tmp_path: Path) -> None:
    result = gate(GOOD, EVIDENCE / "run_truncated")
    assert "incomplete" in _kinds(result)
    (problem,) = [p for p in result.problems if p.kind == "incomplete"]
    assert "killed" in problem.message


def test_one_repetition_is_not_judged(tmp_path: Path) -> None:
    a = _copy_run(tmp_path / "a", rewrite=_one_repetition)
    b = _copy_run(tmp_path / "b", rewrite=_one_repetition)
    result = gate(a, b)
    (problem,) = result.problems
    assert problem.kind == "unjudged"
    assert problem.message.startswith(f"{N_GROUPS} of {N_GROUPS} group(s) not judged")
    assert "1 vs 1" in problem.message
    assert result.summary_line().startswith(f"gate FAILED: 0 of {N_GROUPS} groups judged")
    assert gate(a, b, allow=["unjudged"]).passed


def test_missing_groups_are_listed(tmp_path: Path) -> None:
    result = gate(GOOD, _copy_run(tmp_path / "b", rewrite=_without_layer("wireguard")))
    (problem,) = result.problems
    assert problem.message.count("layer=wireguard") == 3 and "and 1 more" in problem.message
    assert "4 group(s) missing from B [--allow missing]" in result.summary_line()
    # groups only in B (a layer A did not measure) are not a problem
    assert gate(_copy_run(tmp_path / "a", rewrite=_without_layer("wireguard")), GOOD).passed


def test_unknown_kind_and_bad_tolerance(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="unknown gate kind"):
        gate(GOOD, GOOD, allow=["everything"])
    assert cli.main(["compare", str(GOOD), str(GOOD), "--tolerance", "nan"]) == 2
    assert capsys.readouterr().err.startswith("vnetbench: error: --tolerance")
    with pytest.raises(SystemExit):
        cli.main(["compare", str(GOOD), str(GOOD), "--allow", "everything"])
    capsys.readouterr()


def test_cli_kinds_match_the_library() -> None:
    assert tuple(GATE_KINDS) == cli.GATE_KINDS
    for kind in GATE_KINDS:
        assert f"\n  {kind} " in cli.COMPARE_EPILOG


# ---- what counts as a collapse ----------------------------------------------------------------

def _samples(metric: str, values: list[float], unit: str = "us", **labels: str) -> list[Sample]:
    return [Sample(metric, v, unit, {"layer": "bridge", "repetition": str(i), **labels})
            for i, v in enumerate(values)]


@pytest.mark.parametrize(("metric", "unit", "labels", "collapsed"), [
    ("tps", "1/s", {}, True),               # no transactions: the workload did nothing
    ("rtt_p50_us", "us", {}, True),         # a zero latency is impossible
    ("lost", "count", {}, False),           # no losses is a result
    ("udp_loss", "fraction", {}, False),
    ("tcp_retrans_segs", "count", {}, False),
    ("rx_drops", "count", {"device": "eth0"}, False),  # evidence counters
    ("cpu_busy_s", "s", {"cpu": "1"}, False),
])
def test_zero_is_a_collapse_only_where_it_cannot_be_measured(
        metric: str, unit: str, labels: dict[str, str], collapsed: bool) -> None:
    a = _samples(metric, [5.0, 6.0, 5.5, 5.2], unit, **labels)
    b = _samples(metric, [0.0, 0.0, 0.0, 0.0], unit, **labels)
    (change,) = compare(a, b, include_evidence=True)
    assert change.collapsed is collapsed


def test_partial_collapse_and_nan_anywhere() -> None:
    a = _samples("tps", [100.0, 101.0, 99.0, 100.5, 100.2])
    one_zero = _samples("tps", [100.0, 0.0, 99.0, 100.5, 100.2])
    (change,) = compare(a, one_zero)
    # a CPU-seconds counter of a short trial may round to 0: judged only with --all-metrics
    cpu = _samples("cpu_user_s", [0.004, 0.0, 0.005, 0.004], "s")
    (cpu_change,) = compare(cpu, _samples("cpu_user_s", [0.004, 0.005, 0.004, 0.004], "s"),
                            include_evidence=True)
    assert not cpu_change.collapsed
    assert compare(cpu, cpu) == []  # not a main metric: not judged by default
    assert change.collapse == "B: 1 of 5 values zero" and change.verdict == "COLLAPSED"
    # both runs with the same occasional zero: nothing collapsed between them
    (same,) = compare(one_zero, one_zero)
    assert not same.collapsed
    (nan,) = compare(_samples("loss", [3.0, 4.0, 3.0, 5.0], "count"),
                     _samples("loss", [3.0, math.nan, 3.0, 5.0], "count"))
    assert nan.collapse == "B: 1 of 4 values nan"
    assert "COLLAPSED" in format_changes([nan], only_called=True)
