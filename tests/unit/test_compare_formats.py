"""``compare --format markdown|junit``: the gate for a CI job summary and a JUnit report,
with the exit code of the text gate; JUnit's failures are exactly what fails the gate."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.unit.test_compare_gate import (
    GOOD,
    N_GROUPS,
    Line,
    _copy_run,
    _one_failed_trial,
    _one_repetition,
)
from vnetbench.cli import main as cli

EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "evidence"
WORSE = EVIDENCE / "run_layers_b"  # vxlan rtt x1.20 (two regressions), bridge tps x1.10


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = cli.main(["compare", *args])
    out, err = capsys.readouterr()
    assert not err
    return code, out


def _junit(text: str) -> ET.Element:
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    return ET.fromstring(text.split("\n", 1)[1])


def test_markdown_lists_the_called_changes_and_the_verdict(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _run(capsys, str(GOOD), str(WORSE), "--format", "markdown")
    lines = text.splitlines()
    assert code == 1 and lines[0] == "### vnetbench compare: gate FAILED"
    rows = [line for line in lines if line.startswith("| ")]
    assert rows[0].startswith("| verdict | metric | group |") and len(rows) == 1 + 3
    assert rows[1].startswith("| **REGRESSION** | `rtt_p") and "layer=vxlan" in rows[1]
    assert "| x1.200 |" in rows[1] and "| 7/7 |" in rows[1]
    assert any(r.startswith("| improved | `tps` | layer=bridge") for r in rows)
    assert lines[-1] == "**gate FAILED: 16 of 16 groups judged: 2 regression(s), 1 improved, " \
        "0 changed, 0 not resolved (within noise), 13 same; failed by: 2 regression(s)**"
    code, every = _run(capsys, str(GOOD), str(WORSE), "--format", "markdown", "--all")
    assert code == 1 and sum(1 for line in every.splitlines()
                             if line.startswith("| ")) == 1 + N_GROUPS


def test_markdown_of_a_passing_gate(capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _run(capsys, str(GOOD), str(GOOD), "--format", "markdown")
    assert code == 0 and text.startswith("### vnetbench compare: gate passed")
    assert "No change was called" in text and "| verdict |" not in text


def test_junit_has_a_testcase_per_group_and_fails_on_regressions(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _run(capsys, str(GOOD), str(WORSE), "--format", "junit")
    root = _junit(text)
    suite = root.find("testsuite")
    assert suite is not None and code == 1
    cases = suite.findall("testcase")
    assert len(cases) == N_GROUPS == int(root.get("tests", "0"))
    failed = [c for c in cases if c.find("failure") is not None]
    assert {c.get("name", "").split(" ")[0] for c in failed} == {"rtt_p50_us", "rtt_p99_us"}
    assert all("layer=vxlan" in c.get("name", "") and c.get("classname") == "vnetbench.rr"
               for c in failed)
    assert root.get("failures") == suite.get("failures") == "2"
    code, clean = _run(capsys, str(GOOD), str(GOOD), "--format", "junit")
    assert code == 0 and _junit(clean).get("failures") == "0"


def test_junit_fails_on_a_gate_problem_unless_allowed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = _copy_run(tmp_path / "b", rewrite=_one_failed_trial)
    code, text = _run(capsys, str(GOOD), str(broken), "--format", "junit")
    gate_cases = [c for c in _junit(text).iter("testcase") if c.get("classname") == "vnetbench.gate"]
    assert code == 1 and [c.get("name") for c in gate_cases] == ["failed"]
    failure = gate_cases[0].find("failure")
    assert failure is not None and "trial(s) failed" in (failure.text or "")
    code, text = _run(capsys, str(GOOD), str(broken), "--format", "junit", "--allow", "failed")
    root = _junit(text)
    assert code == 0 and root.get("failures") == "0" and root.get("skipped") == "1"


def test_junit_skips_groups_too_few_to_judge(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    one = _copy_run(tmp_path / "one", rewrite=_one_repetition)
    code, text = _run(capsys, str(GOOD), str(one), "--format", "junit", "--allow", "unjudged")
    root = _junit(text)
    skipped = [c for c in root.iter("testcase") if c.find("skipped") is not None]
    assert code == 0 and root.get("failures") == "0"
    assert len(skipped) == N_GROUPS + 1  # every group, and the allowed problem
    message = skipped[0].find("skipped")
    assert message is not None and "too few repetitions" in message.get("message", "")


def test_json_and_format_are_one_or_the_other(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compare", str(GOOD), str(GOOD), "--json", "--format", "junit"]) == 2
    assert "give --json or --format junit, not both" in capsys.readouterr().err


def _slower_machine(lines: list[Line]) -> list[Line]:
    """Every layer's round trips 30 % longer: the ratios to host stay, host's own moves."""
    return [{**d, "value": d["value"] * 1.3} if d["metric"].startswith("rtt_") else d
            for d in lines]


def test_a_baseline_that_moved_between_the_runs_is_noted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    slower = _copy_run(tmp_path / "slower", rewrite=_slower_machine)
    code, text = _run(capsys, str(GOOD), str(slower))
    notes = [line for line in text.splitlines() if line.startswith("note: ")]
    assert code == 1 and len(notes) == 1  # host's own round trips are regressions
    assert notes[0].startswith("note: the baseline host itself changed between the runs in ")
    assert " x1.30" in notes[0] and "repeat A before trusting a called change" in notes[0]
    assert text.splitlines()[-1].startswith("gate FAILED")  # the note is not a verdict
    code, md = _run(capsys, str(GOOD), str(slower), "--format", "markdown")
    assert "Notes:\n- note: the baseline host itself changed" in md
    for other in (GOOD, WORSE):  # host the same in both runs: nothing to note
        code, text = _run(capsys, str(GOOD), str(other))
        assert "note: " not in text
