"""Findings about scaling: the rank-correlation trend test, nodes per core, and each trend
rule (decreases, increases, sublinear, knee) agreeing, contradicting and saying why it is
not comparable; packs of several scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetbench.report.knee import cpus_in, node_cores
from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario
from vnetbench.results.significance import rank_correlation_test
from vnetbench.studies.model import Check, Finding, find_study
from vnetbench.studies.reproduce import run_dirs_of
from vnetbench.studies.trend import with_cores
from vnetbench.studies.verdict import judge


def curve(values: dict[int, list[float]], layer: str = "bridge", cores: int = 1,
          benchmark: str = "teragen") -> list[Sample]:
    out = []
    for nodes, vals in values.items():
        for i, v in enumerate(vals):
            out.append(Sample("elapsed_s", v, "s", {
                "layer": layer, "workload": "hadoop", "benchmark": benchmark, "hosts": "1",
                "nodes": str(nodes), "trial": f"{nodes}-{i}", "cores": str(cores)}))
    return out


def finding(expect: str, band: tuple[float, float] | None = None) -> Finding:
    return Finding(id="f", claim="c", source="Fig. 6", check=Check(
        workload="hadoop", metric="elapsed_s", layer="bridge", along="nodes",
        expect=expect, band=band, where={"benchmark": "teragen"}))  # type: ignore[arg-type]


def test_rank_correlation_is_exact_for_small_curves() -> None:
    rho, p = rank_correlation_test([1, 2, 3, 4, 5], [10, 8, 7, 5, 1])
    assert rho == pytest.approx(-1.0) and p == pytest.approx(2 / 120)
    assert rank_correlation_test([1, 2, 3, 4], [4, 3, 2, 1])[1] == pytest.approx(2 / 24)
    assert rank_correlation_test([1, 2, 3], [5, 5, 5]) == (pytest.approx(float("nan"),
                                                                         nan_ok=True), 1.0)
    _, p_mixed = rank_correlation_test([1, 2, 3, 4, 5, 6], [3, 1, 4, 1, 5, 2])
    assert p_mixed > 0.3


def test_nodes_per_core_counts_the_cpus_the_nodes_could_use() -> None:
    assert cpus_in("0") == 1 and cpus_in("0-3") == 4 and cpus_in("0-1,4") == 3
    assert cpus_in("None") == 0
    env = {"cores": 2}
    assert node_cores({}, RecordedScenario.from_dict({"resources": {"cpuset": "0"}}), env) == 1
    assert node_cores({"resources.cpuset": "0-1"}, RecordedScenario.from_dict({"resources": {"cpuset": ["0", "0-1"]}}),
                      env) == 2
    assert node_cores({"resources.cpuset": "None"}, RecordedScenario.from_dict({}), env) == 2
    assert node_cores({}, RecordedScenario.from_dict({}), {}) == 0
    labelled = with_cores([Sample("x", 1.0, "s", {})], RecordedScenario.from_dict({"resources": {"cpuset": "0"}}), env)
    assert labelled[0].labels["cores"] == "1"


def test_decreases_and_increases_follow_a_significant_rank_trend() -> None:
    falling = curve({2: [50], 3: [40], 4: [33], 5: [30], 6: [26]})
    ok = judge(finding("decreases"), falling)
    assert ok.verdict == "agrees" and "p=0.017" in ok.ours and "2-6 nodes" in ok.ours
    assert judge(finding("increases"), falling).verdict == "contradicts"
    flat = curve({2: [30], 3: [31], 4: [29], 5: [30.5], 6: [29.5]})
    noisy = judge(finding("decreases"), flat)
    assert noisy.verdict == "not comparable" and "no significant trend" in noisy.why
    short = judge(finding("decreases"), curve({2: [50], 4: [30]}))
    assert short.verdict == "not comparable" and "at 2 node count(s)" in short.why
    other = judge(finding("decreases"), curve({2: [1], 3: [2], 4: [3]}, layer="vxlan"))
    assert other.verdict == "not comparable" and "no elapsed_s" in other.why


def test_sublinear_judges_work_per_node_second() -> None:
    linear_ish = {2: [60.0], 3: [41.0], 4: [29.0], 5: [23.5], 6: [19.0]}  # ~ 120 / nodes
    assert judge(finding("sublinear"), curve(linear_ish)).verdict == "not comparable"
    flattening = {2: [60.0], 3: [50.0], 4: [45.0], 5: [42.0], 6: [40.0]}
    assert judge(finding("sublinear"), curve(flattening)).verdict == "agrees"
    superlinear = {2: [60.0], 3: [30.0], 4: [15.0], 5: [8.0], 6: [4.0]}
    assert judge(finding("sublinear"), curve(superlinear)).verdict == "contradicts"


def test_the_knee_is_judged_in_nodes_per_core() -> None:
    # flat, then rising from 8 nodes: on 2 CPUs that is 4 per core
    bent = {2: [30.0], 4: [30.5], 6: [31.0], 8: [31.5], 10: [45.0], 12: [60.0], 14: [75.0]}
    on_two = judge(finding("knee", band=(4, 5)), curve(bent, cores=2))
    assert on_two.verdict == "agrees", on_two.why
    assert "knee at 8 nodes = 4 per core (2 CPUs)" in on_two.ours
    on_one = judge(finding("knee", band=(4, 5)), curve(bent, cores=1))
    assert on_one.verdict == "contradicts" and "8 nodes per core" in on_one.why
    straight = {n: [10.0 * n] for n in (2, 4, 6, 8, 10, 12)}
    none = judge(finding("knee", band=(2, 4)), curve(straight, cores=2))
    assert none.verdict == "not comparable" and "no knee" in none.why
    # measured past the band and still getting faster from its low edge on: no knee where
    # the study found one, a contradiction (the old rule could never contradict without one)
    faster = {n: [120.0 / n] for n in (2, 4, 6, 8, 10, 12, 14)}
    better = judge(finding("knee", band=(2, 4)), curve(faster, cores=2))
    assert better.verdict == "contradicts" and "keeps getting better" in better.why, better.why
    short = {n: [120.0 / n] for n in (2, 4, 6)}  # never past the band: cannot tell
    assert judge(finding("knee", band=(2, 4)), curve(short, cores=2)).verdict == \
        "not comparable"
    with pytest.raises(ValueError, match="needs band"):
        Check(workload="hadoop", metric="elapsed_s", layer="bridge", along="nodes",
              expect="knee")
    with pytest.raises(ValueError, match="goes with along"):
        Check(workload="hadoop", metric="elapsed_s", layer="bridge", expect="decreases")


def test_one_slow_trial_or_a_flattening_curve_is_not_a_knee() -> None:
    """Measured here (study 000 quick, one trial per node count): TeraGen 28.0, 29.4, 33.3,
    40.7, 33.2 s at 2..6 workers bends at 5, but falls after it: noise, not degradation."""
    spike = {2: [28.0], 3: [29.4], 4: [33.3], 5: [40.7], 6: [33.2]}
    j = judge(finding("knee", band=(4, 5)), curve(spike, cores=1))
    assert j.verdict == "not comparable" and "keeps degrading" in j.why
    late = {2: [30.0], 3: [30.2], 4: [30.1], 5: [30.3], 6: [45.0]}  # one step after the bend
    assert judge(finding("knee", band=(4, 5)), curve(late, cores=1)).verdict == "not comparable"
    saturating = {2: [60.0], 3: [40.0], 4: [30.0], 5: [29.5], 6: [29.0], 7: [28.8]}
    assert judge(finding("knee", band=(1, 9)), curve(saturating, cores=1)).verdict \
        == "not comparable"  # elapsed time flattening: better, not worse, after the bend


def test_a_curve_with_a_disturbed_trial_decides_nothing() -> None:
    """Measured here: a first run of study 000's quick pack, with another job's tests beside
    its 2- and 6-worker trials, gave a flat TeraGen curve; the rerun on a quiet machine rose
    from 18.6 to 34.2 s. The run's external_cpu warnings say which trials to distrust."""
    from vnetbench.results.warning_model import EvidenceWarning, WarningKind

    falling = curve({2: [50], 3: [40], 4: [33], 5: [30], 6: [26]})
    busy = EvidenceWarning(WarningKind.EXTERNAL_CPU, "0.4 cores outside the lab", "",
                           {"layer": "bridge", "workload": "hadoop", "nodes": "2"})
    elsewhere = EvidenceWarning(WarningKind.EXTERNAL_CPU, "0.4 cores", "",
                                {"layer": "vxlan", "workload": "hadoop", "nodes": "2"})
    assert judge(finding("decreases"), falling, warnings=[elsewhere]).verdict == "agrees"
    j = judge(finding("decreases"), falling, warnings=[busy])
    assert j.verdict == "not comparable"
    assert "at 2 nodes" in j.why and "the rule would say: agrees" in j.why


def test_a_pack_may_run_several_scenarios(tmp_path: Path) -> None:
    study = find_study("000")
    names = [p.name for p in study.scenario_paths()]
    assert names == ["quick.yaml", "hadoop-quick.yaml", "density-quick.yaml"]
    assert [p.name for p in study.scenario_paths(full=True)] == ["full.yaml", "hadoop-full.yaml",
                                                                 "density-full.yaml"]
    for name in ("b", "a"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text("{}")
    (tmp_path / "not-a-run").mkdir()
    assert [d.name for d in run_dirs_of(tmp_path)] == ["a", "b"]
    assert run_dirs_of(tmp_path / "a") == [tmp_path / "a"]
    assert run_dirs_of(tmp_path / "missing") == []
