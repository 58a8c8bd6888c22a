"""The command line's conventions, through the real CLI in a subprocess: ``--version``,
``--json`` output that parses, ``compare --metric/--workload`` and its exit statuses, a
closed pipe (``| head``) that ends quietly, and a binary or non-UTF-8 scenario that ends in
one error line, never a traceback. None of it needs root or builds anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = ROOT / "tests" / "data" / "evidence"
RUN_A, RUN_B = EVIDENCE / "run_layers", EVIDENCE / "run_layers_b"
QUICK = ROOT / "scenarios" / "quick.yaml"
DENSITY = ROOT / "scenarios" / "density.yaml"


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": str(ROOT / "src") + (os.pathsep + path if path else "")}


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vnetbench", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=300, check=False)


def test_version(tmp_path: Path) -> None:
    from vnetbench import __version__

    done = _cli("--version", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == f"vnetbench {__version__}\n"


# ---- --json -----------------------------------------------------------------------------------

def test_list_json(tmp_path: Path) -> None:
    done = _cli("list", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    layers = {entry["name"]: entry for entry in data["layers"]}
    assert layers["vxlan"]["options"] == ["bridge_nf", "vni", "port", "underlay_mtu"]
    workloads = {entry["name"]: entry for entry in data["workloads"]}
    assert "request" in workloads["rr"]["options"] and "class" in workloads["mpi"]["options"]


def test_plan_json_matches_the_text(tmp_path: Path) -> None:
    as_json = _cli("plan", str(QUICK), "--commands", "--json", cwd=tmp_path)
    as_text = _cli("plan", str(QUICK), "--commands", cwd=tmp_path)
    assert as_json.returncode == as_text.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    plans = data["plans"]
    assert as_text.stdout.startswith(f"plan of quick ({QUICK}): ")
    summary = data["summary"]
    counts = f"{summary['labs']} lab(s) built, {summary['sessions']} session pass(es)"
    assert counts in as_text.stdout.splitlines()[0]
    assert [f"### {p['title']}" for p in plans] == [
        line for line in as_text.stdout.splitlines() if line.startswith("### ")]
    first = plans[0]
    assert first["layer"] == "host" and first["skipped"] is None
    text_blocks = as_text.stdout.split("### ")[1:]
    assert "\n".join(first["plan"]) == text_blocks[0].split("\n", 1)[1].rstrip("\n")


def test_compare_json_is_the_gate(tmp_path: Path) -> None:
    done = _cli("compare", str(RUN_A), str(RUN_B), "--json", cwd=tmp_path)
    gate = json.loads(done.stdout)
    # run_layers_b: vxlan rtt x1.20 (a regression), bridge tps x1.10 (improved)
    assert done.returncode == gate["exit_code"] == 1 and gate["passed"] is False
    regressions = [c for c in gate["changes"] if c["regression"]]
    assert {(c["metric"], c["labels"]["layer"]) for c in regressions} == {
        ("rtt_p50_us", "vxlan"), ("rtt_p99_us", "vxlan")}
    assert all(c["ratio"] == pytest.approx(1.2, rel=0.01) for c in regressions)
    assert gate["summary"].startswith("gate FAILED")


def test_doctor_json_agrees_with_its_exit_code(tmp_path: Path) -> None:
    done = _cli("doctor", "--json", cwd=tmp_path)
    facts = json.loads(done.stdout)
    assert done.returncode == (0 if facts["ok"] else 1)
    assert facts["root"] == (os.geteuid() == 0)


# ---- compare filters --------------------------------------------------------------------------

def test_compare_metric_filter_judges_only_those(tmp_path: Path) -> None:
    done = _cli("compare", str(RUN_A), str(RUN_B), "--json", "--metric", "tps", cwd=tmp_path)
    gate = json.loads(done.stdout)
    assert {c["metric"] for c in gate["changes"]} == {"tps"}
    # bridge tps improved, nothing regressed: the gate passes
    assert done.returncode == 0 and gate["passed"], gate["summary"]
    assert [c["labels"]["layer"] for c in gate["changes"] if c["verdict"] == "improved"] == [
        "bridge"]


def test_compare_metric_pattern_may_name_secondary_metrics(tmp_path: Path) -> None:
    done = _cli("compare", str(RUN_A), str(RUN_B), "--json", "--metric", "rtt_p*_us",
                cwd=tmp_path)
    metrics = {c["metric"] for c in json.loads(done.stdout)["changes"]}
    assert metrics == {"rtt_p1_us", "rtt_p25_us", "rtt_p50_us", "rtt_p75_us", "rtt_p99_us"}
    assert done.returncode == 1


def test_compare_workload_filter(tmp_path: Path) -> None:
    done = _cli("compare", str(RUN_A), str(RUN_B), "--json", "--workload", "stream",
                cwd=tmp_path)
    gate = json.loads(done.stdout)
    assert {c["labels"]["workload"] for c in gate["changes"]} == {"stream"}
    assert done.returncode == 0 and gate["regressions"] == 0


@pytest.mark.parametrize(("option", "value", "says"), [
    ("--metric", "rtt_p5O_us", "--metric 'rtt_p5O_us' matches no metric of either run"),
    ("--workload", "hadoop", "--workload 'hadoop' is not a workload of either run"),
])
def test_compare_filter_matching_nothing_is_bad_input(option: str, value: str, says: str,
                                                      tmp_path: Path) -> None:
    done = _cli("compare", str(RUN_A), str(RUN_B), option, value, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith(f"vnetbench: error: {says}")


# ---- closed pipes and hostile input -----------------------------------------------------------

@pytest.mark.parametrize(("argv", "codes"), [
    (("schema",), {141}), (("plan", str(DENSITY), "--commands"), {141}),
    (("plan", str(DENSITY), "--commands", "--json"), {141}), (("list",), {0, 141}),
    (("compare", str(RUN_A), str(RUN_B), "--all", "--all-metrics"), {1, 141}),
])
def test_head_of_a_pipeline_ends_quietly(argv: tuple[str, ...], codes: set[int],
                                         tmp_path: Path) -> None:
    """``vnetbench ... | head -1``: the reader goes away after one line while vnetbench still
    writes (schema and plan print more than a pipe holds, so they always meet the closed
    pipe: exit 141; the others may finish first)."""
    writer = subprocess.Popen([sys.executable, "-m", "vnetbench", *argv], cwd=tmp_path,
                              env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert writer.stdout is not None
    reader = subprocess.run(["head", "-1"], stdin=writer.stdout, capture_output=True,
                            timeout=300, check=False)
    writer.stdout.close()
    _, stderr = writer.communicate(timeout=300)
    assert len(reader.stdout.splitlines()) == 1
    assert "Traceback" not in stderr.decode() and stderr == b"", stderr
    assert writer.returncode in codes


def test_big_outputs_do_hit_the_closed_pipe(tmp_path: Path) -> None:
    """The schema and a plan of density.yaml are larger than a pipe's 64 KiB buffer, so the
    test above really closes the pipe under them."""
    for argv in (("schema",), ("plan", str(DENSITY), "--commands")):
        assert len(_cli(*argv, cwd=tmp_path).stdout) > 65536, argv


@pytest.mark.parametrize(("content", "says"), [
    (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8, "is a binary file"),
    (b"\xff\xfeU\x00T\x00F\x00-\x001\x006\x00", "is a binary file"),
    (b"layers: [host]\nname: caf\xe9\n", "line 2 is not UTF-8 text"),
    (bytes(range(128, 256)) * 4, "is not UTF-8 text"),
])
@pytest.mark.parametrize("command", ["plan", "run", "run-json"])
def test_binary_scenario_is_one_error_line(content: bytes, says: str, command: str,
                                           tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_bytes(content)
    argv = {"plan": ["plan", str(scenario)],
            "run": ["run", str(scenario), "--out", str(tmp_path / "out")],
            "run-json": ["run", str(scenario), "--json", "--out", str(tmp_path / "o2")],
            }[command]
    done = _cli(*argv, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("vnetbench: error: "), done.stderr
    assert says in lines[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "o2").exists()


# ---- environment variables --------------------------------------------------------------------

def test_every_environment_variable_is_documented() -> None:
    import re

    used = {m for path in (ROOT / "src" / "vnetbench").rglob("*.py")
            for m in re.findall(r"VNETBENCH_[A-Z0-9_]+", path.read_text())}
    doc = (ROOT / "docs" / "cli.md").read_text()
    table = doc[doc.index("### Environment variables"):]
    documented = set(re.findall(r"^\| `(VNETBENCH_[A-Z0-9_]+)` \|", table, re.MULTILINE))
    assert len(used) >= 9 and used <= documented, sorted(used - documented)


@pytest.mark.parametrize("variable", ["VNETBENCH_PROBE", "VNETBENCH_WIREGUARD_GO"])
def test_an_unusable_override_is_one_clear_error(variable: str, tmp_path: Path) -> None:
    from vnetbench.errors import MissingToolError
    from vnetbench.host.binaries import find_binary
    from vnetbench.host.features import find_wireguard_go

    find = {"VNETBENCH_PROBE": lambda: find_binary("vnetbench-probe"),
            "VNETBENCH_WIREGUARD_GO": find_wireguard_go}[variable]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(variable, str(tmp_path / "absent"))
        with pytest.raises(MissingToolError, match=f"{variable}=.* is not an executable file"):
            find()
