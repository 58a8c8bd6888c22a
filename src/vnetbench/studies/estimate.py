"""A finding's ratio estimated as the run measured it: the engine of the report's tables
(``results.stats``, ``results.pairing``) applied to one configuration of a study's check.

    paired, shared pairs   the layer and the baseline measured in the same rounds or trial
                           blocks (every sample labelled ``pair``, the same pair ids): the
                           median of the pairs' log ratios, the moving-block bootstrap
                           interval and the randomisation test within pairs
    paired, via the host   two non-host layers measured in separate blocks or sessions,
                           each next to its own host trial (pairs ``<round>-<layer>`` or
                           ``<session>.<round>``): per round, the layer's ratio to its own
                           host trial over the baseline's ratio to its own, judged pair by
                           pair the same way
    unpaired               no pair labels (a run with ``pairing: off``, or a design without
                           the baseline): ratio of medians, independent bootstrap, permutation
                           test

The noise floor is the A/A control of the same workload, metric and configuration: the
baseline's own when it was measured twice (the host, groups ``a`` and ``b``), else the
host's (every pack measures the host twice); ``Estimate.floor_source`` says which, and a run
without any A/A control has no floor (the 5 % rule alone).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from vnetbench.results.model import AA_LABEL, PAIR_LABEL, Sample
from vnetbench.results.pairing import ScalarPairs
from vnetbench.results.stats import (
    LayerRatio,
    NoiseFloor,
    Ratio,
    better_direction,
    by_pair,
    noise_floor,
    paired_design,
    paired_noise_floor,
    paired_ratio,
    pairs_ratio,
    ratio_of_medians,
)
from vnetbench.scenario.model import BASELINE_LAYER

CONFIG_LABELS = ("hosts", "nodes")
"""Labels a ratio keeps, to say where the comparison was made."""


@dataclass(frozen=True)
class Estimate:
    """A layer's ratio to its baseline in one configuration, and whose A/A gave its floor."""

    ratio: LayerRatio
    floor_source: str
    """``the baseline's own A/A control``, ``host's A/A control (no A/A of X in this run)``,
    or empty without a floor."""


def estimate(layer: str, baseline: str, members: Sequence[Sample], base: Sequence[Sample],
             host: Sequence[Sample] = ()) -> Estimate:
    """The ratio ``members`` / ``base`` as they were measured, with the floor of the same
    configuration's A/A control (``host``: the host's samples of that configuration, for a
    non-host baseline's floor and for pairing two blocked layers through their host trials)."""
    first = members[0]
    ratio = paired_ratio(members, base)
    if ratio is None and baseline != BASELINE_LAYER:
        ratio = _through_host(members, base, host)
    if ratio is None:
        ratio = ratio_of_medians([s.value for s in members], [s.value for s in base])
    noise, source = _floor(baseline, base, host)
    labels = {k: first.labels[k] for k in CONFIG_LABELS if k in first.labels}
    return Estimate(LayerRatio(
        layer=layer, baseline=baseline, labels=labels, metric=first.metric, unit=first.unit,
        median=median(s.value for s in members), baseline_median=_level(members, base),
        ratio=ratio, direction=better_direction(first.metric, first.unit), noise=noise), source)


def _level(members: Sequence[Sample], base: Sequence[Sample]) -> float:
    """The baseline's level where the layer was measured: the median of the baseline's
    samples in the layer's own pairs (the rounds of its session, the blocks beside it), so a
    ratio turned into what the layer adds (``within``: microseconds) is scaled by the baseline
    it was taken against, not by the baseline's level in other sessions (study 000's native
    round trip sat at 12.5, 17 or 30 µs in different sessions of one pass on 2026-11-28, and
    scaled by all of them Docker's NAT "added" 5.4 µs in one pass and 8.5 in the next where
    its rounds added 6-7 µs in both); all of them when unpaired or paired through the host."""
    pairs = {s.labels[PAIR_LABEL] for s in members if PAIR_LABEL in s.labels}
    own = [s.value for s in base if s.labels.get(PAIR_LABEL) in pairs]
    return median(own) if own else median(s.value for s in base)


def _through_host(members: Sequence[Sample], base: Sequence[Sample], host: Sequence[Sample]
                  ) -> Ratio | None:
    """Two layers measured apart (blocks, or sessions of their own) paired through their own
    host trials: per round, (layer / its host) over (baseline / its host). None when not
    paired."""
    design = paired_design(members, base)
    if design is None or not host or paired_design(host, host) is None:
        return None
    host_a = by_pair(s for s in host if s.labels.get(AA_LABEL, "a") == "a")
    mine = _relative(by_pair(members), host_a)
    theirs = _relative(by_pair(base), host_a)
    pairs = ScalarPairs.make(mine, {k: [v] for k, v in theirs.items()})
    return pairs_ratio(pairs, design) if pairs.n else None


def _relative(values: dict[str, float], host: dict[str, float]) -> dict[str, float]:
    """Per round, a value over its pair's host value."""
    out = {}
    for pair, value in values.items():
        ref = host.get(pair, math.nan)
        if ref > 0 and value > 0:
            out[round_of(pair)] = value / ref
    return out


def round_of(pair: str) -> str:
    """The round of a pair id: ``3`` of a block ``3-docker-nat`` and of a session's ``12.3``
    (``<session>.<round>``: the layers of separate sessions meet round by round)."""
    if "-" in pair:
        return pair.split("-", 1)[0]
    return pair.rsplit(".", 1)[-1]


def _floor(baseline: str, base: Sequence[Sample], host: Sequence[Sample]
           ) -> tuple[NoiseFloor | None, str]:
    """The A/A control's floor of the baseline (when it was measured twice), else the host's
    of the same configuration; None without one."""
    own = _aa_floor(base)
    if own is not None:
        return own, "the baseline's own A/A control"
    if baseline != BASELINE_LAYER:
        theirs = _aa_floor(host)
        if theirs is not None:
            return theirs, f"the host's A/A control: no A/A of {baseline} in this run"
    return None, ""


def _aa_floor(samples: Sequence[Sample]) -> NoiseFloor | None:
    if not any(s.labels.get(AA_LABEL) == "b" for s in samples):
        return None
    if all(PAIR_LABEL in s.labels for s in samples):
        return paired_noise_floor(samples)
    return noise_floor(samples)
