"""Study packs: every shipped pack loads and checks what its scenario measures; the verdict
rules on recorded results (a known agree, a known contradict, and each reason a finding is
not comparable)."""

from __future__ import annotations

import pytest

from vnetbench.results.model import Sample
from vnetbench.scenario.sweep import load_scenario
from vnetbench.studies.model import Check, Finding, HostFacts, Published, all_studies
from vnetbench.studies.verdict import judge


def samples(layer: str, values: list[float], metric: str = "tps",
            workload: str = "oltp", hosts: str = "2") -> list[Sample]:
    return [Sample(metric, v, "1/s", {"layer": layer, "workload": workload, "hosts": hosts,
                                      "nodes": "2", "trial": f"{layer}{i}"}, i)
            for i, v in enumerate(values)]


HOST = samples("host", [1000, 1010, 990, 1005, 995, 1002])
OVERLAY = samples("docker-overlay", [600, 610, 590, 605, 598, 603])  # x0.60


def finding(expect: str = "lower", band: tuple[float, float] | None = None,
            needs: list[str] | None = None, layer: str = "docker-overlay") -> Finding:
    return Finding(id="f", claim="overlay halves throughput", source="Table 1",
                   published=[Published(what="direct", value=68925, unit="tps")],
                   check=Check(workload="oltp", metric="tps", layer=layer, baseline="host",
                               expect=expect, band=band,  # type: ignore[arg-type]
                               margin=1.25 if expect == "same" else None),
                   needs=needs or [])


def test_a_called_difference_in_the_papers_direction_agrees() -> None:
    j = judge(finding("lower", band=(0.5, 0.7)), HOST + OVERLAY)
    assert j.verdict == "agrees", j.why
    assert j.ours.startswith("x0.60") and "inside the study's band" in j.why
    assert "direct 68925 tps" in j.published


def test_the_other_direction_or_outside_the_band_contradicts() -> None:
    assert judge(finding("higher"), HOST + OVERLAY).verdict == "contradicts"
    out = judge(finding("lower", band=(0.8, 0.95)), HOST + OVERLAY)
    assert out.verdict == "contradicts" and "outside the study's band" in out.why
    assert judge(finding("same"), HOST + OVERLAY).verdict == "contradicts"


def test_no_difference_agrees_with_same_and_contradicts_a_direction() -> None:
    twin = samples("docker-overlay", [1001, 1008, 993, 1003, 996, 1000])
    assert judge(finding("same"), HOST + twin).verdict == "agrees"
    assert judge(finding("lower"), HOST + twin).verdict == "contradicts"


def test_not_comparable_says_why() -> None:
    needs = judge(finding(needs=["kvm"]), HOST + OVERLAY)
    assert needs.verdict == "not comparable" and "whether KVM works" in needs.why
    tcg = judge(finding(needs=["kvm"]), HOST + OVERLAY, host=HostFacts(kvm=False, cores=2))
    assert tcg.verdict == "not comparable" and "TCG" in tcg.why
    emulated = judge(finding(layer="vm-bridge"), HOST + samples("vm-bridge", [5, 6, 7, 5]),
                     emulated={"vm-bridge"})
    assert emulated.verdict == "not comparable" and "emulated CPU" in emulated.why
    missing = judge(finding(layer="routed"), HOST)
    assert missing.verdict == "not comparable" and "no tps" in missing.why
    few = judge(finding(), HOST[:2] + OVERLAY[:2])  # 2 vs 2 can never be significant
    assert few.verdict == "not comparable" and "could not resolve" in few.why


def test_an_unknown_capability_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown needs"):
        finding(needs=["teleportation"])


STUDIES = sorted({s.id: s for s in all_studies().values()}.values(), key=lambda s: s.id)


@pytest.mark.parametrize("study", STUDIES, ids=lambda s: s.name)
def test_every_pack_checks_what_its_quick_scenario_measures(study) -> None:  # type: ignore[no-untyped-def]
    for full in (False, True):
        assert all(path.is_file() for path in study.scenario_paths(full))
    points = [p for path in study.scenario_paths() for p in load_scenario(path).points]
    assert study.findings, "a pack without findings"
    for f in study.findings:
        if f.missing():
            continue  # checked once the capability exists
        c = f.check
        mine = [p for p in points if c.layer in p.scenario.layers
                and c.workload in {kind for kind, _ in p.scenario.workload_options()}]
        assert mine, f"{f.id}: no quick scenario runs {c.workload} on {c.layer}"
        if c.along is None:
            assert any(c.baseline in p.scenario.layers for p in mine), f.id
        else:  # a trend needs the axis swept over enough points for the test to be able
            counts = {p.scenario.nodes for p in mine}  # to be significant (5 points)
            assert len(counts) >= 5, (f.id, sorted(counts))


def test_all_five_studies_have_packs() -> None:
    assert [s.id for s in STUDIES] == ["000", "001", "002", "003", "004"]


def cores(layer: str, softirq: float, workload: str = "oltp") -> list[Sample]:
    """One trial's per-core CPU states on ``layer``: core 1 ``softirq`` of its second."""
    labels = {"layer": layer, "workload": workload, "trial": f"{layer}-t", "hosts": "2",
              "nodes": "2"}
    out = []
    for cpu, soft in (("0", 0.05), ("1", softirq)):
        out += [Sample("cpu_softirq_s", soft, "s", {**labels, "cpu": cpu}),
                Sample("cpu_core_sys_s", 0.1, "s", {**labels, "cpu": cpu}),
                Sample("cpu_idle_s", 0.9 - soft, "s", {**labels, "cpu": cpu})]
    return out


def test_a_detector_finding_is_judged_on_the_layers_own_trials_of_its_workload() -> None:
    """The detector runs on the layer's trials of the check's workload, not on whatever the
    run warned about elsewhere; without its counters it could not have fired."""
    f = Finding(id="softirq", claim="one core saturates", source="text",
                check=Check(workload="oltp", metric="tps", layer="docker-overlay",
                            expect="warned", warning="softirq_saturation"))
    saw = judge(f, HOST + OVERLAY + cores("docker-overlay", 0.85))
    assert saw.verdict == "agrees" and saw.could_fail and saw.rule == "detector", saw.why
    quiet = judge(f, HOST + OVERLAY + cores("docker-overlay", 0.2))
    assert quiet.verdict == "contradicts" and quiet.could_fail, quiet.why
    # saturation on another workload's trials says nothing of this one's
    elsewhere = judge(f, HOST + OVERLAY + cores("docker-overlay", 0.2)
                      + cores("docker-overlay", 0.85, workload="stream"))
    assert elsewhere.verdict == "contradicts", elsewhere.why
    blind = judge(f, HOST + OVERLAY)  # no per-core counters: the detector could not fire
    assert blind.verdict == "not comparable" and "counters" in blind.why, blind.why
    assert judge(f, HOST).verdict == "not comparable"  # layer not measured
    with pytest.raises(ValueError, match="warned goes with warning"):
        Check(workload="oltp", metric="tps", layer="x", expect="warned")


def test_a_median_within_5_percent_with_a_wide_interval_decides_nothing() -> None:
    noisy = samples("docker-overlay", [300, 2600, 1004, 1006, 996, 2900])
    for expect in ("same", "lower"):
        j = judge(finding(expect), HOST + noisy)
        assert j.verdict == "not comparable" and "could not" in j.why, (expect, j.ours)
