"""Paired statistics on simulated drifting machines: few false calls, real differences found.

The simulated machine switches between a fast and a slow mode every few rounds (as this VM's
round trip switches between ~14 and ~21 µs every few seconds); in each round every path is
measured in that round's mode, with a few percent of noise of its own. An unpaired comparison
of such a machine calls differences that are not there or misses those that are; the paired
design compares each layer only within its rounds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from vnetbench.results.histogram import HistogramRecord, LatencyHistogram
from vnetbench.results.model import AA_LABEL, DESIGN_LABEL, PAIR_LABEL, Sample
from vnetbench.results.pairing import ScalarPairs, best_p, block_indices, fewest_pairs, floor_of
from vnetbench.results.stats import ratio_of_medians, ratios_to_baseline

ROUNDS = 24


def modes(rng: np.random.Generator, n: int, every: int = 4) -> np.ndarray:
    """A machine that switches between x1.0 and x1.5 every ``every`` rounds, at random."""
    return np.repeat(rng.choice([1.0, 1.5], size=n // every + 1), every)[:n]


def scalar_pairs(rng: np.random.Generator, effect: float, noise: float = 0.02,
                 n: int = ROUNDS) -> ScalarPairs:
    m = modes(rng, n)
    layer = m * effect * np.exp(rng.normal(0, noise, n))
    a = m * np.exp(rng.normal(0, noise, n))
    b = m * np.exp(rng.normal(0, noise, n))
    keys = [f"0.{i}" for i in range(n)]
    return ScalarPairs.make(dict(zip(keys, layer, strict=True)),
                            {k: [x, y] for k, x, y in zip(keys, a, b, strict=True)})


def test_identical_paths_on_a_drifting_machine_are_rarely_called() -> None:
    rng = np.random.default_rng(11)
    results = [scalar_pairs(rng, 1.0).ratio(seed=k) for k in range(300)]
    significant = sum(r.p_value < 0.05 for r in results) / len(results)
    called = sum(r.p_value < 0.05 and abs(math.log(r.value)) > math.log(1.05)
                 for r in results) / len(results)
    assert significant <= 0.08, significant  # 5% promised; binomial slack for 300 draws
    assert called <= 0.05, called


def blocks_of_two(rng: np.random.Generator, effect: float, n: int) -> ScalarPairs:
    """``n`` trial blocks, each a layer's trial next to one baseline trial, on the machine."""
    m = modes(rng, n, every=2)
    keys = [f"{i}-x" for i in range(n)]
    layer = m * effect * np.exp(rng.normal(0, 0.02, n))
    base = m * np.exp(rng.normal(0, 0.02, n))
    return ScalarPairs.make(dict(zip(keys, layer, strict=True)),
                            {k: [v] for k, v in zip(keys, base, strict=True)})


@pytest.mark.parametrize("n", [6, 7, 8, 10])
def test_few_blocks_keep_the_promise_and_still_find_a_real_cost(n: int) -> None:
    """With the signed-rank statistic 6 blocks of two can be significant (2/2^6 = 0.031;
    the median could not go below 2^3/2^6 until 10 blocks), and identical paths still are
    called no more often than the 5 % promised."""
    rng = np.random.default_rng(n)
    nulls = [blocks_of_two(rng, 1.0, n).ratio(seed=k) for k in range(300)]
    assert all(r.resolvable for r in nulls)
    false = sum(r.p_value < 0.05 for r in nulls) / len(nulls)
    assert false <= 0.08, false  # 5% promised; binomial slack for 300 draws
    costs = [blocks_of_two(rng, 1.10, n).ratio(seed=k) for k in range(100)]
    assert sum(r.p_value < 0.05 for r in costs) / len(costs) >= 0.95


def test_known_differences_are_detected_despite_the_drift() -> None:
    rng = np.random.default_rng(12)
    for effect, wanted in ((1.03, 0.9), (1.10, 1.0), (0.93, 1.0)):
        results = [scalar_pairs(rng, effect).ratio(seed=k) for k in range(100)]
        found = sum(r.p_value < 0.05 for r in results) / len(results)
        assert found >= wanted, (effect, found)
        estimates = [r.value for r in results]
        assert abs(float(np.median(estimates)) / effect - 1) < 0.01, (effect, estimates[:5])


def test_unpaired_trials_cannot_see_what_pairs_see_on_the_same_machine() -> None:
    """The reason for pairing: trials measured one after another meet the machine in other
    modes; as two groups, the modes blur a 3% cost that pairs resolve."""
    rng = np.random.default_rng(13)
    paired_found = unpaired_found = 0
    paired_width: list[float] = []
    unpaired_width: list[float] = []
    for k in range(60):
        paired = scalar_pairs(rng, 1.03).ratio(seed=k)
        paired_found += paired.p_value < 0.05
        paired_width.append(paired.high - paired.low)
        layer = modes(rng, ROUNDS, every=1) * 1.03 * np.exp(rng.normal(0, 0.02, ROUNDS))
        base = modes(rng, ROUNDS, every=1) * np.exp(rng.normal(0, 0.02, ROUNDS))
        unpaired = ratio_of_medians(layer, base, seed=k)
        unpaired_found += unpaired.p_value < 0.05
        unpaired_width.append(unpaired.ci.high - unpaired.ci.low)
    assert paired_found >= 54
    assert unpaired_found <= paired_found - 12
    assert float(np.median(unpaired_width)) > 5 * float(np.median(paired_width))


def test_the_floor_of_a_paired_run_is_small_where_the_unpaired_one_is_not() -> None:
    rng = np.random.default_rng(14)
    floors = [floor_of(scalar_pairs(rng, 1.0).aa(seed=k)) for k in range(50)]
    assert float(np.median(floors)) < 0.02, floors[:5]


def test_a_pair_without_a_baseline_is_dropped_and_too_few_pairs_never_significant() -> None:
    pairs = ScalarPairs.make({"0.0": 2.0, "0.1": 2.0, "0.2": 2.0},
                             {"0.0": [1.0, 1.0], "0.1": [1.0, 1.0]})
    assert pairs.keys == ("0.0", "0.1")
    result = pairs.ratio()
    assert result.value == pytest.approx(2.0)
    assert not result.resolvable  # 3 x 3 = 9 assignments: p can never be below 1/9
    assert result.p_value >= 1 / 9


def test_block_resamples_keep_neighbours_together() -> None:
    idx = block_indices(27, 50, np.random.default_rng(1))
    assert idx.shape == (50, 27)
    steps = np.diff(idx, axis=1)
    # blocks of 3: within a block every step is +1
    assert (steps[:, 0] == 1).all() and (steps[:, 1] == 1).all()


def _hist(rng: np.random.Generator, scale: float, n: int = 2000) -> tuple[tuple[float, int], ...]:
    values = scale * np.exp(rng.normal(0, 0.12, n)) + rng.exponential(scale * 0.4, n)
    uniq, counts = np.unique(np.round(values, 1), return_counts=True)
    return tuple((float(v), int(c)) for v, c in zip(uniq, counts, strict=True))


def _paired_samples(design: str, effect: float, rng: np.random.Generator) -> list[Sample]:
    out: list[Sample] = []
    m = modes(rng, ROUNDS)
    for r in range(ROUNDS):
        pair = f"3.{r}" if design == "interleaved" else f"{r}-bridge"
        common = {"nodes": "2", "hosts": "1", "workload": "rr", "repetition": str(r),
                  PAIR_LABEL: pair, DESIGN_LABEL: design}
        out.append(Sample("tps", m[r] * effect * math.exp(rng.normal(0, 0.01)), "1/s",
                          {**common, "layer": "bridge"}))
        out.append(Sample("tps", m[r] * math.exp(rng.normal(0, 0.01)), "1/s",
                          {**common, "layer": "host", AA_LABEL: "a"}))
        if design == "interleaved":
            out.append(Sample("tps", m[r] * math.exp(rng.normal(0, 0.01)), "1/s",
                              {**common, "layer": "host", AA_LABEL: "b"}))
        else:
            aa = {**common, PAIR_LABEL: f"{r}-aa"}
            out.append(Sample("tps", m[r] * math.exp(rng.normal(0, 0.01)), "1/s",
                              {**aa, "layer": "host", AA_LABEL: "a"}))
            out.append(Sample("tps", m[r] * math.exp(rng.normal(0, 0.01)), "1/s",
                              {**aa, "layer": "host", AA_LABEL: "b"}))
    return out


@pytest.mark.parametrize("design", ["interleaved", "blocks"])
def test_ratios_to_baseline_judge_paired_samples_pair_by_pair(design: str) -> None:
    rng = np.random.default_rng(17)
    samples = _paired_samples(design, 0.9, rng)
    (ratio,) = ratios_to_baseline(samples)
    assert ratio.ratio.design == design
    assert ratio.ratio.value == pytest.approx(0.9, rel=0.01)
    assert ratio.verdict() == "worse"  # tps: higher is better
    assert ratio.noise is not None and ratio.floor < 0.02
    unpaired = ratios_to_baseline([Sample(s.metric, s.value, s.unit,
                                          {k: v for k, v in s.labels.items()
                                           if k not in (PAIR_LABEL, DESIGN_LABEL)})
                                   for s in samples])
    assert unpaired[0].ratio.design == "unpaired"
    assert unpaired[0].floor > ratio.floor  # the drift is charged to the unpaired floor


def test_a_percentile_is_judged_round_by_round_where_merged_histograms_jump() -> None:
    """A machine in three modes (as this VM's 10, 28 and 50 µs): the merged p50 of each path
    lands in whichever mode holds the middle of its slices, so the A/A pair's merged p50s can
    differ by a mode; each round's own percentiles agree, and the headline judges those,
    showing the pooled values beside them."""
    from vnetbench.report.tables import headline_table

    rng = np.random.default_rng(18)
    samples: list[Sample] = []
    hists: list[HistogramRecord] = []
    mode = np.repeat(rng.choice([10.0, 28.0, 50.0], size=8), 4)[:30]
    for r, m in enumerate(mode):
        common = {"nodes": "2", "hosts": "1", "workload": "rr", "repetition": str(r),
                  PAIR_LABEL: f"1.{r}", DESIGN_LABEL: "interleaved"}
        for layer, aa, scale in (("bridge", "", 1.1), ("host", "a", 1.0), ("host", "b", 1.0)):
            labels = {**common, "layer": layer, **({AA_LABEL: aa} if aa else {})}
            hist = LatencyHistogram(_hist(rng, m * scale))
            samples.append(Sample("rtt_p50_us", hist.percentile(50), "us", labels))
            hists.append(HistogramRecord("rtt_us", "us", labels, hist))
    (ratio,) = ratios_to_baseline(samples)
    assert ratio.ratio.design == "interleaved" and ratio.ratio.n == 30
    assert ratio.ratio.value == pytest.approx(1.1, rel=0.02)
    assert ratio.verdict() == "worse" and ratio.floor < 0.05
    table = headline_table(samples, histograms=hists)
    assert table is not None
    (cell,) = [c for (layer, _), c in table.cells.items() if layer == "bridge"]
    merged = LatencyHistogram.merge(h.hist for h in hists if h.labels["layer"] == "bridge")
    assert cell.median == pytest.approx(merged.percentile(50))  # shown: the pooled value
    assert cell.ratio is not None and cell.ratio.ratio.value == ratio.ratio.value  # judged
    assert cell.ratio.added == pytest.approx(cell.ratio.baseline_median * (ratio.ratio.value - 1))


def test_blocks_put_each_layer_next_to_a_baseline_trial_in_abba_order() -> None:
    from vnetbench.run.design import plan_blocks
    from vnetbench.scenario.model import Scenario
    from vnetbench.scenario.sweep import SweepPoint

    point = SweepPoint(Scenario.model_validate({"layers": ["host", "bridge", "vxlan"],
                                                "workloads": ["oltp"], "seed": 5}), {})
    layers = ["host", "bridge", "vxlan"]
    first = plan_blocks(point, layers, 0, 10)
    second = plan_blocks(point, layers, 1, 10 + len(first))
    for trials, baseline_first in ((first, True), (second, False)):
        assert [t.index for t in trials] == list(range(trials[0].index,
                                                       trials[0].index + len(trials)))
        blocks = [trials[k:k + 2] for k in range(0, len(trials), 2)]
        assert sorted(b[0].pair.split("-")[1] for b in blocks) == ["aa", "bridge", "vxlan"]
        for block in blocks:
            assert block[0].pair == block[1].pair
            base = [t for t in block if t.layer == "host" and t.aa == "a"]
            assert len(base) == 1 and (block[0] is base[0]) == baseline_first
            labels = block[1].labels()
            assert labels["pair"] == block[0].pair and labels["design"] == "blocks"


def test_compare_of_paired_runs_judges_each_layer_by_its_cost_not_the_machine() -> None:
    from vnetbench.results.compare import compare

    def run(effect: float, machine: float, seed: int) -> list[Sample]:
        return [Sample(s.metric, s.value * machine, s.unit, s.labels)
                for s in _paired_samples("interleaved", effect, np.random.default_rng(seed))]

    slower = compare(run(0.8, 1.0, 1), run(0.8, 0.85, 2))  # the whole machine 15% slower
    host = next(c for c in slower if c.labels["layer"] == "host")
    bridge = next(c for c in slower if c.labels["layer"] == "bridge")
    assert host.regression  # the baseline's own value is compared as a value
    assert bridge.labels["compared"] == "ratio to host" and not bridge.called
    assert bridge.median_a == pytest.approx(0.8, rel=0.02)
    costlier = compare(run(0.8, 1.0, 1), run(0.6, 1.0, 3))  # the layer itself costs more
    bridge = next(c for c in costlier if c.labels["layer"] == "bridge")
    assert bridge.regression and bridge.ratio == pytest.approx(0.75, rel=0.03)


def test_a_docker_layer_lives_beside_the_baseline_in_a_session_of_its_own() -> None:
    """Docker's labs are not built all at once, but each beside two host labs: the
    namespace layers share one session, each Docker layer has its own, and every workload of
    the point runs whole in rounds (no client joins a container's namespace); a VM layer
    still makes the point blocked."""
    from vnetbench.run.design import PointDesign, paired_designs, session_groups
    from vnetbench.scenario.model import Scenario
    from vnetbench.scenario.sweep import ScenarioFile, SweepPoint

    layers = ["host", "bridge", "docker-nat", "docker-overlay"]
    s = Scenario.model_validate({"layers": layers})
    assert session_groups(s, layers) == (("host", "bridge"), ("host", "docker-nat"),
                                         ("host", "docker-overlay"))
    assert session_groups(s, ["host", "docker-nat"]) == (("host", "docker-nat"),)
    assert session_groups(s, ["host", "bridge"]) == (("host", "bridge"),)

    def design(names: list[str]) -> PointDesign:
        point = SweepPoint(Scenario.model_validate({"layers": names,
                                                    "workloads": ["rr", "oltp"]}), {})
        (d,) = paired_designs(ScenarioFile("s.yaml", {}, (point,)),
                              lambda p: list(p.scenario.layers))
        return d

    d = design(layers)
    assert [w.design for w in d.workloads] == ["rounds", "rounds"]
    assert d.groups == session_groups(s, layers)
    assert d.paths == 3 + 3 + 3  # each session with its A/A pair
    assert "not namespaces" in d.workloads[0].why
    assert "3 sessions" in d.describe()
    vm = design(["host", "docker-nat", "vm-bridge"])
    assert [w.design for w in vm.workloads] == ["blocks", "blocks"]
    assert vm.groups == (("host", "docker-nat", "vm-bridge"),)


def test_cpu_limits_keep_each_docker_lab_in_a_session_of_its_own() -> None:
    """Per-node CPU limits forbid interleaving (one client shared by every lab), not the
    sessions: the Docker layers still live one at a time beside the baseline's labs."""
    from vnetbench.run.design import paired_designs
    from vnetbench.scenario.model import Scenario
    from vnetbench.scenario.sweep import ScenarioFile, SweepPoint

    layers = ["host", "bridge", "docker-nat", "docker-overlay"]
    point = SweepPoint(Scenario.model_validate({"layers": layers, "workloads": ["rr"],
                                                "resources": {"cpus": 0.5}}), {})
    (d,) = paired_designs(ScenarioFile("s.yaml", {}, (point,)), lambda p: list(p.scenario.layers))
    assert [w.design for w in d.workloads] == ["rounds"]
    assert "CPU limits" in d.workloads[0].why
    assert d.groups == (("host", "bridge"), ("host", "docker-nat"), ("host", "docker-overlay"))


def test_builds_of_a_session_split_its_rounds_and_its_time_counts_each_warm_up() -> None:
    """``pairing.builds``: the fixed rounds split in order between the builds, numbered on
    (every round a pair of its own), each build warming up again; more builds than rounds
    refused in one line."""
    from pydantic import ValidationError

    from vnetbench.run.design import build_rounds, paired_designs
    from vnetbench.scenario.model import Scenario
    from vnetbench.scenario.sweep import ScenarioFile, SweepPoint

    assert build_rounds(8, 2) == [range(0, 4), range(4, 8)]
    assert build_rounds(7, 2) == [range(0, 3), range(3, 7)]
    assert build_rounds(3, 1) == [range(0, 3)]
    assert build_rounds(2, 5) == [range(0, 1), range(1, 2)]
    for n, b in ((9, 4), (14, 3), (8, 8)):
        shares = build_rounds(n, b)
        assert [r for share in shares for r in share] == list(range(n))
        assert max(map(len, shares)) - min(map(len, shares)) <= 1

    def seconds(builds: int) -> tuple[float, float, int]:
        s = Scenario.model_validate({"layers": ["host", "bridge", "docker-nat"], "repeat": 4,
                                     "warmup": 1, "pairing": {"builds": builds},
                                     "workloads": [{"rr": {"duration": "1s"}}]})
        point = SweepPoint(s, {})
        (d,) = paired_designs(ScenarioFile("s.yaml", {}, (point,)),
                              lambda p: list(p.scenario.layers))
        return d.session_seconds(0), d.expected_seconds(), d.runs(0)

    one, two = seconds(1), seconds(2)
    # rounds over 3 + 3 live labs (two sessions), 1 s a run: (4 rounds + a warm-up a build)
    assert one == (5 * 6 * 1.0, 5 * 6 * 1.0, 30)
    assert two == (6 * 6 * 1.0, 6 * 6 * 1.0, 36)
    with pytest.raises(ValidationError, match="at most 2 builds"):
        Scenario.model_validate({"layers": ["host"], "repeat": 2, "pairing": {"builds": 3}})


@pytest.mark.parametrize("rounds", [6, 7, 8, 9])
def test_best_p_is_what_the_paired_test_gives_a_difference_the_same_in_every_round(
        rounds: int) -> None:
    """A layer 3 % below both baseline labs in every round: the paired test's smallest
    p-value is ``best_p``; with the A/A pair 7 rounds cannot call it (p = 0.059), 8 can."""
    noise = [1.0 + 0.001 * ((7 * i) % 5) for i in range(rounds)]
    layer = {str(i): 0.97 * noise[i] for i in range(rounds)}
    base = {str(i): [noise[i], noise[(i + 2) % rounds] * 1.0005] for i in range(rounds)}
    got = ScalarPairs.make(layer, base).ratio()
    if 3**rounds <= 4096:  # every assignment enumerated: the design's exact bound
        assert got.min_p == pytest.approx(best_p(rounds, 3))
        assert got.resolvable == (rounds >= fewest_pairs(3))
    assert got.p_value == pytest.approx(best_p(rounds, 3), abs=0.01)  # sampled beyond
    assert fewest_pairs(3) == 8 and fewest_pairs(2) == 6
    assert best_p(7, 3) == pytest.approx(129 / 2187)
