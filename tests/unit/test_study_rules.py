"""Verdicts a reviewer can defend, on synthetic samples: a trend claim checks direction and
shape, a banded claim needs its estimate inside the band, two configurations never meet in
one ratio, a machine's detected KVM and cores lift what they should, a reason names the noise
floor when the floor decided, the lab's own settings give "set by the lab", a property's
relation to a slowdown across kernels, and a contradiction's cause with its measurement."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from vnetbench.results.model import Sample
from vnetbench.results.recorded import RecordedScenario
from vnetbench.results.significance import rank_correlation_test
from vnetbench.results.store import RunWriter
from vnetbench.scenario.sweep import load_scenario
from vnetbench.studies.bounds import BITRATE, RATE, RTT, with_bounds
from vnetbench.studies.causes import explain
from vnetbench.studies.judgement import Judgement
from vnetbench.studies.model import Cause, Check, Finding, HostFacts, Size, Study, all_studies
from vnetbench.studies.reproduce import counts, judge_runs, verdict_lines
from vnetbench.studies.verdict import judge
from vnetbench.workloads.mpi.workload import MpiOptions
from vnetbench.workloads.oltp import OltpOptions
from vnetbench.workloads.probe.workload import RrOptions, StreamOptions


def runs(layer: str, values: list[float], metric: str = "tps", unit: str = "1/s",
         workload: str = "oltp", **labels: str) -> list[Sample]:
    return [Sample(metric, v, unit, {"layer": layer, "workload": workload, "hosts": "2",
                                     "nodes": "2", "trial": f"{layer}{labels}{i}", **labels}, i)
            for i, v in enumerate(values)]


def compare(expect: str, layer: str = "docker-overlay", baseline: str = "host",
            band: tuple[float, float] | None = None, metric: str = "tps",
            workload: str = "oltp", **extra: object) -> Finding:
    return Finding(id="f", claim="c", source="Table 1", check=Check.model_validate(
        {"workload": workload, "metric": metric, "layer": layer, "baseline": baseline,
         "expect": expect, "band": band, **extra}))


HOST = [1000.0, 1010, 990, 1005, 995, 1002]


# ---- trend: direction AND shape ----------------------------------------------------------

def curve(values: dict[int, float]) -> list[Sample]:
    return [Sample("elapsed_s", v, "s", {"layer": "bridge", "workload": "hadoop",
                                         "benchmark": "teragen", "hosts": "1",
                                         "nodes": str(n), "trial": str(n), "cores": "1"})
            for n, v in values.items()]


SUBLINEAR = Finding(id="teragen", claim="shorter, but not linearly", source="Fig. 6",
                    check=Check(workload="hadoop", metric="elapsed_s", layer="bridge",
                                along="nodes", expect="sublinear",
                                where={"benchmark": "teragen"}))


def test_a_slower_curve_never_agrees_with_shorter_but_not_linearly() -> None:
    """Measured here (study 000 quick): TeraGen rose from 18.6 to 34.2 s as workers were
    added; the old rule called it "not linear" and agreed."""
    slower = judge(SUBLINEAR, curve({2: 18.6, 3: 21.0, 4: 24.9, 5: 27.7, 6: 30.8, 7: 34.2}))
    assert slower.verdict == "contradicts", slower.why
    assert "longer" in slower.why
    flat = judge(SUBLINEAR, curve({2: 30.0, 3: 30.4, 4: 29.8, 5: 30.1, 6: 29.9, 7: 30.2}))
    assert flat.verdict == "not comparable" and "does not get significantly shorter" in flat.why
    linear = judge(SUBLINEAR, curve({2: 60.0, 3: 40.2, 4: 29.9, 5: 24.1, 6: 20.0, 7: 17.2}))
    assert linear.verdict == "not comparable" and "linear or not" in linear.why
    flattening = judge(SUBLINEAR, curve({2: 60.0, 3: 50.0, 4: 45.0, 5: 42.0, 6: 40.0}))
    assert flattening.verdict == "agrees" and "not linearly" in flattening.why
    assert "work per node-second rho=-1.00" in flattening.ours


def test_no_curve_agrees_unless_it_gets_shorter_and_bends() -> None:
    rng = random.Random(7)
    for _ in range(200):
        ys = {n: rng.uniform(5.0, 60.0) for n in range(2, 8)}
        j = judge(SUBLINEAR, curve(ys))
        if j.verdict == "agrees":
            xs = sorted(ys)
            rho, p = rank_correlation_test(xs, [ys[x] for x in xs])
            assert rho < 0 and p < 0.05, ys  # a significant fall
            assert ys[xs[-1]] * xs[-1] > ys[xs[0]] * xs[0], ys  # and less than linear


# ---- band: the estimate must lie inside ------------------------------------------------------

def test_an_estimate_outside_its_band_never_agrees() -> None:
    """Rule: agrees only when the point estimate lies inside the band (its interval then
    reaches the band); contradicts when the whole interval lies outside; else the run
    cannot tell. Recorded: overlay x0.54 [0.44, 0.59] against [0.34, 0.51] "agreed"."""
    spread = runs("docker-overlay", [440, 470, 520, 560, 600, 640])  # x0.54, wide interval
    j = judge(compare("lower", band=(0.34, 0.51)), runs("host", HOST) + spread)
    assert j.ratio is not None and j.ratio.ratio.ci.low < 0.51 < j.ratio.ratio.value
    assert j.verdict == "not comparable" and "outside the study's band" in j.why, j.why
    wide = judge(compare("lower", band=(0.5, 0.6)), runs("host", HOST) + spread)
    assert wide.verdict == "not comparable" and "wider than the band" in wide.why, wide.why
    close = runs("docker-overlay", [538, 540, 542, 539, 541, 540])
    inside = judge(compare("lower", band=(0.5, 0.6)), runs("host", HOST) + close)
    assert inside.verdict == "agrees" and "estimate x0.54 inside" in inside.why
    tight = runs("docker-overlay", [700, 702, 698, 701, 699, 700])
    out = judge(compare("lower", band=(0.34, 0.51)), runs("host", HOST) + tight)
    assert out.verdict == "contradicts" and "whole interval" in out.why


def test_no_random_sample_agrees_with_an_estimate_outside_the_band() -> None:
    rng = random.Random(30)
    band = (0.84, 1.26)
    for _ in range(300):
        scale = rng.uniform(0.6, 1.8)
        layer = [scale * 1000 * rng.uniform(0.7, 1.3) for _ in range(4)]
        j = judge(compare("higher", layer="routed", band=band),
                  runs("host", HOST[:4]) + runs("routed", layer))
        assert j.ratio is not None
        if not band[0] <= j.ratio.ratio.value <= band[1]:
            assert j.verdict != "agrees", (j.ours, j.why)


# ---- configurations are never pooled ---------------------------------------------------------

def test_two_configurations_are_never_pooled() -> None:
    """Study 003: Direct-Bridge (x0.88) and Bridge-Bridge (x0.50) trials were judged together
    (a true x0.50 reported as "agrees x0.69"); study 000's transmit (x1.00) and receive
    (x2.00) streams were averaged."""
    samples = (runs("host", HOST, placement="in-layer") + runs("host", HOST, placement="client-host")
               + runs("docker-nat", [500, 505, 495, 502, 498, 500], placement="in-layer")
               + runs("docker-nat", [880, 885, 875, 882, 878, 880], placement="client-host"))
    pooled = judge(compare("lower", layer="docker-nat", band=(0.66, 1.0)), samples)
    assert pooled.verdict == "not comparable" and pooled.ratio is None
    assert "2 configurations" in pooled.why and "placement=client-host|in-layer" in pooled.why
    pinned = judge(compare("lower", layer="docker-nat", where={"placement": "in-layer"}), samples)
    assert pinned.ours.startswith("x0.50")
    tx_rx = (runs("host", HOST, "cpu_cores_per_gbps", "1", "stream", direction="forward")
             + runs("host", HOST, "cpu_cores_per_gbps", "1", "stream", direction="reverse")
             + runs("docker-nat", HOST, "cpu_cores_per_gbps", "1", "stream", direction="forward")
             + runs("docker-nat", [2 * v for v in HOST], "cpu_cores_per_gbps", "1", "stream",
                    direction="reverse"))
    f = compare("higher", layer="docker-nat", metric="cpu_cores_per_gbps", workload="stream")
    assert judge(f, tx_rx).verdict == "not comparable"
    rx = compare("higher", layer="docker-nat", metric="cpu_cores_per_gbps", workload="stream",
                 where={"direction": "reverse"})
    assert judge(rx, tx_rx).ours.startswith("x2.00")


def test_a_curve_of_two_configurations_is_refused() -> None:
    both = curve({2: 60.0, 3: 50.0, 4: 45.0, 5: 42.0, 6: 40.0}) + [
        s.with_labels(placement="client-host") for s in curve({2: 9.0, 3: 8, 4: 7, 5: 6, 6: 5})]
    j = judge(SUBLINEAR, both)
    assert j.verdict == "not comparable" and "2 configurations" in j.why


def test_variants_are_always_labelled_defaults_included() -> None:
    assert RrOptions().labels() == {"placement": "in-layer"}
    assert RrOptions(client="host").labels() == {"placement": "client-host"}
    assert StreamOptions().labels() == {"placement": "in-layer", "direction": "forward"}
    assert StreamOptions(direction="reverse").labels()["direction"] == "reverse"
    assert OltpOptions().labels() == {"placement": "in-layer"}
    assert OltpOptions(client="host").labels() == {"placement": "client-host"}
    assert MpiOptions().labels() == {"test": "pingpong", "placement": "in-layer"}


STUDIES = sorted({s.id: s for s in all_studies().values()}.values(), key=lambda s: s.id)


def predicted_configs(study: Study, finding: Finding, size: Size = "quick"
                      ) -> dict[str, set[tuple[tuple[str, str], ...]]]:
    """Per side (the check's layer and its baseline), the configurations the pack's scenarios
    of ``size`` (those that need KVM too) would give the check's workload that its filter
    lets through: the labels the workload writes (``labels()``, a probe's protocol), the
    sweep axes, hosts and nodes. Labels only the run writes (a Hadoop benchmark, a circuit, a
    cgroup) are pinned by ``where`` and checked at run time (``configs``)."""
    c = finding.check
    variants: list[tuple[str, dict[str, str]]] = []
    for path in [*study.scenario_paths(size), *study.kvm_scenario_paths(size)]:
        for point in load_scenario(path).points:
            s = point.scenario
            for kind, options in s.workload_options():
                if kind != c.workload:
                    continue
                variant = getattr(options, "labels", dict)
                labels = {"hosts": str(s.hosts), **point.axes, **variant()}
                if c.along is None:
                    labels["nodes"] = str(s.nodes)
                else:
                    labels.pop("nodes", None)
                if isinstance(getattr(options, "protocol", None), str):
                    labels["protocol"] = options.protocol  # type: ignore[attr-defined]
                variants += [(layer, labels) for layer in s.layers]
    known = {k for _, labels in variants for k in labels}
    out: dict[str, set[tuple[tuple[str, str], ...]]] = {"layer": set(), "baseline": set()}
    sides = (("layer", c.layer, c.where),
             ("baseline", c.baseline, {**c.where, **c.baseline_where}))
    for side, layer, where in sides:
        for at, labels in variants:
            if at == layer and all(labels.get(k, "") == v for k, v in where.items()
                                   if k in known):
                # a sweep axis the filter leaves open is judged value by value (verdict:
                # _at_each), so it is no second configuration
                out[side].add(tuple(sorted((k, v) for k, v in labels.items()
                                           if "." not in k or k in where)))
    return out


@pytest.mark.parametrize("study", STUDIES, ids=lambda s: s.name)
def test_every_finding_selects_one_configuration(study: Study) -> None:
    """In every size the pack has (and its KVM scenarios), each finding's filter selects one
    configuration of its layer and one of its baseline; a level (``reaches``) and a curve
    (``along``) need only the layer."""
    for size in study.sizes:
        for f in study.findings:
            if f.check.across is not None or f.check.expect == "warned":
                continue  # a point per kernel; a detector's warning
            configs = predicted_configs(study, f, size)
            sides = ["layer"] if f.check.along or f.check.expect == "reaches" else \
                ["layer", "baseline"]
            for side in sides:
                if not configs[side]:
                    continue  # not in this size (the capability it needs is missing)
                assert len(configs[side]) == 1, (size, f.id, side, sorted(configs[side]))


# ---- capabilities found on the machine -------------------------------------------------------

def write_run(path: Path, samples: list[Sample], environment: dict[str, object]) -> Path:
    with RunWriter.create(path, {"name": "synthetic", "layers": ["host"]}, environment) as w:
        w.append_samples(samples)
    return path


def one_finding_study(finding: Finding) -> Study:
    return Study(id="998", name="synthetic", title="t", seed="none", mapping=[],
                 scenarios={"quick": "quick.yaml"}, findings=[finding])


VM = compare("higher", layer="vm-bridge", metric="rtt_p50_us", workload="rr")
VM_FINDING = Finding(id="vm", claim="a VM adds 30 us", source="Fig. 4", check=VM.check,
                     needs=["kvm"])


def test_a_host_with_kvm_detected_lifts_the_kvm_block(tmp_path: Path) -> None:
    samples = (runs("host", [20, 21, 19, 20.5, 19.5, 20], "rtt_p50_us", "us", "rr")
               + runs("vm-bridge", [50, 51, 49, 50.5, 49.5, 50], "rtt_p50_us", "us", "rr"))
    study = one_finding_study(VM_FINDING)
    kvm = write_run(tmp_path / "kvm", samples, {"cores": 2, "layers": {"vm-bridge": {"vm": {
        "accel": "kvm", "emulated_cpu": False}}}})
    [j] = judge_runs(study, [kvm])
    assert j.verdict == "agrees", j.why
    assert j.ours.startswith("x2.50") and "+30 µs" in j.ours
    tcg = write_run(tmp_path / "tcg", samples, {"cores": 2, "layers": {"vm-bridge": {"vm": {
        "accel": "tcg", "emulated_cpu": True}}}})
    [t] = judge_runs(study, [tcg])
    assert t.verdict == "not comparable" and "TCG" in t.why


def test_many_cores_come_from_the_machine() -> None:
    assert HostFacts(cores=2).lacks("many-cores") == \
        "2 cores here; the finding needs at least 8 (many-cores)"
    assert HostFacts(cores=56).lacks("many-cores") is None
    assert HostFacts.of([{"cores": 56, "layers": {"bridge": {}}}]) == HostFacts(None, 56)
    env = {"cores": 4, "layers": {"a": {"vm": {"accel": "kvm"}}, "b": {"vm": {"accel": "tcg"}}}}
    assert HostFacts.of([env]).kvm is False  # one guest under TCG: not every VM is at speed
    f = Finding(id="x", claim="c", source="s", check=VM.check, needs=["many-cores", "kvm"])
    assert f.missing(HostFacts(kvm=True, cores=64)) == []
    assert len(f.missing(HostFacts(kvm=False, cores=64))) == 1


# ---- reasons name what decided ---------------------------------------------------------------

def floor_samples(layer_value: float) -> list[Sample]:
    host = (runs("host", [1000, 1001, 999, 1000], aa="a")
            + runs("host", [1420, 1421, 1419, 1420], aa="b"))
    return host + runs("docker-nat", [layer_value * v for v in (1, 1.001, 0.999, 1, 1.002, 0.998)])


def test_the_printed_reason_names_the_floor_when_the_floor_decided() -> None:
    """The A/A control moved 42%: x0.78 is significant (p=0.001) but within that floor.
    The old reason said "not significant (p=0.001)"."""
    j = judge(compare("lower", layer="docker-nat"), floor_samples(944.0))
    assert j.ratio is not None and j.ratio.ratio.significant
    assert j.verdict == "not comparable"
    assert "noise floor" in j.why and "42%" in j.why and "not significant" not in j.why, j.why
    assert j.resolvable == pytest.approx(1.42, abs=0.01)
    assert "A/A floor 42%" in j.resolves
    beyond = judge(compare("lower", layer="docker-nat"), floor_samples(500.0))
    assert beyond.verdict == "agrees"
    few = judge(compare("lower", layer="docker-nat"),
                runs("host", HOST[:2]) + runs("docker-nat", [500, 501]))
    assert "too few repetitions" in few.why and few.resolvable == pytest.approx(1.05)


# ---- set by the lab --------------------------------------------------------------------------

def test_a_comparison_the_lab_decided_is_set_by_the_lab_never_agreement() -> None:
    cap = {RATE: "1e+09"}
    f = compare("same", layer="bridge", metric="goodput_bps", workload="stream",
                bound="link.rate")
    at_cap = (runs("host", [940e6, 941e6, 939e6, 940e6, 941e6, 940e6], "goodput_bps", "bps",
                   "stream", **cap)
              + runs("bridge", [938e6, 940e6, 939e6, 941e6, 939e6, 940e6], "goodput_bps", "bps",
                     "stream", **cap))
    j = judge(f, at_cap)
    assert j.verdict == "set by the lab" and "1000 Mbit/s" in j.why
    assert "0 agrees" in counts([j]) and "1 set by the lab" in counts([j])
    assert "set by the lab" in "\n".join(verdict_lines(one_finding_study(f), [j]))
    slow = at_cap[:6] + runs("bridge", [600e6, 610e6, 590e6, 605e6, 595e6, 600e6],
                             "goodput_bps", "bps", "stream", **cap)
    assert judge(f, slow).verdict == "contradicts"  # the layer fell off the cap: judged
    unbound = compare("same", layer="bridge", metric="goodput_bps", workload="stream",
                      margin=1.05)
    assert judge(unbound, at_cap).verdict == "agrees"  # without a bound, the old reading


def test_bounds_come_from_the_run_scenario() -> None:
    scenario = {"file": "x.yaml", "name": "wan", "hosts": 4, "nodes": 4,
                "layers": ["host"],
                "link": {"rate": "300mbit", "jitter": "0.3ms", "delay": "5ms",
                         "pairs": [{"hosts": [0, 1], "delay": "8.85ms"},
                                   {"hosts": [2, 3], "delay": "31.05ms"}]},
                "workloads": [{"rr": {"circuits": True}}, {"media": {"streams": 9,
                                                                     "bitrate": "2mbit"}},
                              {"stream": {"protocol": "udp", "bitrate": "300mbit"}}]}
    base = {"layer": "host", "placement": "in-layer", "hosts": "4", "nodes": "4"}
    samples = [Sample("rtt_p50_us", 1.0, "us", {**base, "workload": "rr", "circuit": "2-3"}),
               Sample("rtt_p50_us", 1.0, "us", {**base, "workload": "rr", "circuit": "0-1"}),
               Sample("bitrate_bps", 1.0, "bps", {**base, "workload": "media"}),
               Sample("bitrate_bps", 1.0, "bps", {**base, "workload": "media", "stream": "3"}),
               Sample("goodput_bps", 1.0, "bps", {**base, "workload": "stream",
                                                  "protocol": "udp", "direction": "forward"})]
    out = with_bounds(samples, RecordedScenario.from_dict(scenario))
    assert float(out[0].labels[RTT]) == pytest.approx(62100)
    assert float(out[1].labels[RTT]) == pytest.approx(17700)
    other = with_bounds([samples[0].with_labels(circuit="1-3")], RecordedScenario.from_dict(scenario))[0]
    assert float(other.labels[RTT]) == pytest.approx(10000)  # link.delay for pairs not listed
    assert float(out[2].labels[BITRATE]) == pytest.approx(18e6)
    assert float(out[3].labels[BITRATE]) == pytest.approx(2e6)
    assert float(out[4].labels[BITRATE]) == pytest.approx(300e6)
    assert all(float(s.labels[RATE]) == pytest.approx(300e6) for s in out)
    assert with_bounds(samples, RecordedScenario.from_dict({"name": "broken", "layers": "no"})) == samples


# ---- a property predicting a slowdown --------------------------------------------------------

def kernels(rates: dict[str, float], slowdown: dict[str, float]) -> list[Sample]:
    out = []
    for k, rate in rates.items():
        for i in range(3):
            for layer, runtime in (("host", 1.0), ("bridge", slowdown[k])):
                labels = {"layer": layer, "workload": "mpi", "kernel": k, "test": k,
                          "class": "S", "placement": "in-layer", "trial": f"{layer}{k}{i}",
                          "hosts": "2", "nodes": "4"}
                out.append(Sample("mpi_runtime_s", runtime, "s", labels))
                out.append(Sample("mpi_messages_count", rate * runtime, "count", labels))
    return out


RATE_FINDING = Finding(id="rate", claim="c", source="Figs. 6, 8", check=Check(
    workload="mpi", metric="mpi_runtime_s", layer="bridge", baseline="host",
    expect="rises-with", across="kernel", predictor="mpi_messages_count",
    predictor_per="mpi_runtime_s"))


def test_a_slowdown_rising_with_the_packet_rate_agrees() -> None:
    rates = {"bt": 1e3, "cg": 8e3, "lu": 4e3, "sp": 2e3, "mg": 500.0, "ft": 100.0, "is": 16e3}
    rising = {k: 1.0 + r / 20e3 for k, r in rates.items()}
    j = judge(RATE_FINDING, kernels(rates, rising))
    assert j.verdict == "agrees" and "rho=+1.00" in j.ours, j.why
    falling = {k: 2.0 - r / 20e3 for k, r in rates.items()}
    assert judge(RATE_FINDING, kernels(rates, falling)).verdict == "contradicts"
    four = {k: rates[k] for k in ("bt", "cg", "lu", "sp")}
    few = judge(RATE_FINDING, kernels(four, rising))
    assert few.verdict == "not comparable" and "p=0.083" in few.why  # 2/24: never significant


# ---- a contradiction's cause, with its measurement -------------------------------------------

def test_a_contradictions_cause_shows_its_measurement_or_says_untested() -> None:
    check = Check(workload="hadoop", metric="elapsed_s", layer="bridge", along="nodes",
                  expect="decreases")
    cpu = [Sample(m, v, "s", {"layer": "bridge", "workload": "hadoop", "cpu": cpu, "trial": t})
           for t in ("1", "2") for cpu, busy in (("0", 0.97), ("1", 0.3))
           for m, v in (("cpu_busy_s", busy), ("cpu_idle_s", 1 - busy))]
    tested = Finding(id="x", claim="c", source="s", check=check,
                     cause=Cause(text="one CPU for every worker", measure="cpu-saturated"))
    line = explain(tested, cpu)
    assert "busiest core 97% busy" in line and "(supports it)" in line
    idle = [Sample(s.metric, 0.4 if s.metric == "cpu_busy_s" else 0.6, "s", s.labels)
            for s in cpu]
    assert "does NOT support it" in explain(tested, idle)
    assert "untested" in explain(tested, [])
    story = Finding(id="y", claim="c", source="s", check=check, cause=Cause(text="a story"))
    assert explain(story, cpu).startswith("explanation (untested")
    assert explain(Finding(id="z", claim="c", source="s", check=check), cpu) == ""


def test_the_resolvable_ratio_without_a_floor_is_the_5_percent_rule() -> None:
    j = judge(compare("lower"), runs("host", HOST) + runs("docker-overlay", [600.0] * 6))
    assert j.resolvable == pytest.approx(1.05) and "no A/A control" in j.resolves
    assert math.isnan(Judgement(j.finding, "not comparable", "x").resolvable)


def test_a_daemon_cgroup_is_judged_against_the_server_node_of_the_same_layer() -> None:
    """Study 003's weave-cpu-heavy had a zero baseline (native has no daemons)."""
    f = compare("higher", layer="userspace", baseline="userspace", metric="cgroup_cpu_s",
                where={"cgroup": "infra"}, baseline_where={"cgroup": "n0"})
    samples = (runs("userspace", [3.0, 3.1, 2.9, 3.05], "cgroup_cpu_s", "s", cgroup="infra")
               + runs("userspace", [1.0, 1.1, 0.9, 1.05], "cgroup_cpu_s", "s", cgroup="n0")
               + runs("host", [0.0] * 4, "cgroup_cpu_s", "s", cgroup="infra"))
    j = judge(f, samples)
    assert j.ours.startswith("x2.9"), j.why


def test_reproduction_json_carries_the_resolvable_ratio(tmp_path: Path) -> None:
    from vnetbench.studies.reproduce import write_reproduction

    study = one_finding_study(compare("lower", band=(0.5, 0.7)))
    run = write_run(tmp_path / "run", runs("host", HOST) + runs("docker-overlay", [600.0] * 6),
                    {"cores": 2})
    write_reproduction(study, [run])
    data = json.loads((run / "reproduction.json").read_text())
    assert data["findings"][0]["resolvable"] == pytest.approx(1.05)
    assert data["findings"][0]["verdict"] == "agrees"


# ---- Hadoop in VM guests: judged where the guests get KVM ------------------------------------

KVM_ENV = {"cores": 2, "layers": {"vm-bridge": {"vm": {"accel": "kvm", "emulated_cpu": False}}}}
TCG_ENV = {"cores": 2, "layers": {"vm-bridge": {"vm": {"accel": "tcg", "emulated_cpu": True}}}}


def hadoop_trials(layer: str, benchmark: str, metric: str, values: list[float],
                  nodes: str = "5", hosts: str = "2") -> list[Sample]:
    return [Sample(metric, v, "s" if metric == "elapsed_s" else "MiB/s",
                   {"layer": layer, "workload": "hadoop", "benchmark": benchmark,
                    "hosts": hosts, "nodes": nodes, "cores": "2",
                    "trial": f"{layer}-{benchmark}-{nodes}-{i}"}, i)
            for i, v in enumerate(values)]


def test_study_002_kvm_rows_are_judged_on_a_kvm_host_and_never_under_tcg(tmp_path: Path) -> None:
    study = all_studies()["vasconcelos"]
    vm = [f for f in study.findings if f.check.workload == "hadoop" and f.check.layer == "vm-bridge"]
    assert len(vm) == 13 and all("kvm" in f.needs and "hadoop-in-vm" not in f.needs for f in vm)
    # a simulated KVM run: every figure 1.5 times the containers' on the guests
    base = [100.0, 101, 99, 100.5, 99.5, 100.2]
    samples: list[Sample] = []
    for key in sorted({(f.check.where["benchmark"], f.check.metric) for f in vm}):
        samples += hadoop_trials("bridge", *key, base)
        samples += hadoop_trials("vm-bridge", *key, [1.5 * v for v in base])
    kvm = {j.finding.id: j for j in judge_runs(study, [write_run(tmp_path / "kvm", samples, KVM_ENV)])}
    for f in vm:
        j = kvm[f.id]
        if "disk-benchmark" in f.needs:  # bonnie++ is not built: still not comparable, for that
            assert j.verdict == "not comparable" and "disk benchmark" in j.why, j.why
            continue
        if "cpu-benchmark" in f.needs:  # nor systester's pi digits
            assert j.verdict == "not comparable" and "CPU benchmark" in j.why, j.why
            continue
        assert j.verdict == ("agrees" if f.check.expect == "higher" else "contradicts"), (f.id, j.why)
        assert j.ours.startswith("x1.50"), (f.id, j.ours)
    tcg = {j.finding.id: j for j in judge_runs(study, [write_run(tmp_path / "tcg", samples, TCG_ENV)])}
    for f in vm:
        assert tcg[f.id].verdict == "not comparable", f.id
        assert "TCG" in tcg[f.id].why and "a host with working KVM judges it" in tcg[f.id].why


def test_study_000_fig7_trends_are_judged_on_a_kvm_host(tmp_path: Path) -> None:
    study = all_studies()["varma"]
    vm = {f.id: f for f in study.findings if f.check.layer == "vm-bridge" and f.check.along}
    assert set(vm) == {"teragen-slower-with-vms", "dfsio-read-faster-with-vms"}
    samples: list[Sample] = []
    for nodes, teragen, dfsio_read in ((2, 30.0, 20.0), (3, 34.0, 17.0), (4, 39.0, 15.0),
                                       (5, 45.0, 13.5), (6, 52.0, 12.0)):
        samples += hadoop_trials("vm-bridge", "teragen", "elapsed_s", [teragen], str(nodes), "1")
        samples += hadoop_trials("vm-bridge", "dfsio-read", "elapsed_s", [dfsio_read], str(nodes),
                                 "1")
    judged = {j.finding.id: j for j in judge_runs(study, [write_run(tmp_path / "kvm", samples,
                                                                    KVM_ENV)])}
    for fid in vm:
        assert judged[fid].verdict == "agrees", (fid, judged[fid].why)
    under_tcg = {j.finding.id: j for j in judge_runs(study, [write_run(tmp_path / "tcg", samples,
                                                                       TCG_ENV)])}
    assert all(under_tcg[fid].verdict == "not comparable" for fid in vm)
