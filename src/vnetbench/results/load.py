"""Latency against offered load, per layer: the curves of an open-loop ``rr`` measured at
several offered rates (``rr: {rate: [...]}``), each layer's knee and capacity, and both as
ratios to the baseline's with bootstrap intervals.

- **Curve**: at each offered rate (the samples' ``offered`` label), the median over the
  repetitions of ``rtt_p50_us``, ``rtt_p99_us`` (counted from each request's arrival time),
  ``tps`` (the achieved rate) and ``behind`` (the share of repetitions that fell behind).
- **Knee** (``KNEE_FACTOR``): the offered rate at which the layer's p99 first reaches twice
  its low-load value, the lowest p99 at the loads below it (at the lowest loads a p99 rests
  on few requests, and one slow wake-up can lift it above the next load's: doubling the
  lowest rate's alone would then find the knee late), interpolated between the two rates
  around it on the logarithm of the p99; a curve that never doubles has its knee beyond the
  highest rate (``None``, told as ``> R``), a curve measured at one rate has none.
- **Knee of the p50** (``knee_p50``): the same rule on the p50s. A low-load p99 on a VM is
  often its wake-ups, not the layer (host's at 5 % of capacity was 167 µs in one run and 250
  µs in the next, its p50 41-43 µs), so a knee relative to it moves with the machine; the
  p50's rests on half of the requests and repeats (docs/measurements.md). Both are given.
- **Capacity**: the highest achieved rate at any offered rate (the median over repetitions);
  a layer that kept up at the highest offered rate has only a lower bound (``kept_up``),
  and no capacity ratio is made with a bound on either side.
- **Ratios**: each to the baseline's (``host``), with a 95 % percentile-bootstrap interval:
  every draw resamples each (layer, rate) cell's repetitions with replacement, redraws both
  curves and takes the ratio of their knees (or capacities). A draw whose knee lies beyond
  the measured rates is left out; the share left out is reported (``censored``).

Pure: samples in, ``LoadCurve`` and ``LoadRatio`` out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vnetbench.results.model import Sample

KNEE_FACTOR = 2.0
"""The knee: where the p99 first reaches this multiple of its lowest-load value."""

BOOTSTRAP_DRAWS = 1000
OFFERED_LABEL = "offered"
CURVE_METRICS = ("rtt_p50_us", "rtt_p99_us", "tps", "behind")


@dataclass(frozen=True)
class LoadPoint:
    """One offered rate of a layer's curve (medians over its repetitions)."""

    offered: float
    p50_us: float
    p99_us: float
    achieved: float
    behind_share: float
    repetitions: int


@dataclass(frozen=True)
class LoadCurve:
    """A layer's latency against offered load, with its knee and capacity."""

    layer: str
    config: str
    """What else the cell is measured at (``2 nodes, 2 hosts``), as the headline says it."""
    points: tuple[LoadPoint, ...]
    knee: float | None
    """The offered rate where the p99 doubled (None: beyond the highest, or too few rates)."""
    capacity: float
    kept_up: bool = False
    """It kept up at the highest offered rate: its capacity is at least ``capacity`` (a
    lower bound, never given a ratio)."""
    knee_p50: float | None = None
    """The offered rate where the p50 doubled (as ``knee``)."""


@dataclass(frozen=True)
class LoadRatio:
    """A layer's knee or capacity over the baseline's, with a bootstrap interval."""

    layer: str
    what: str
    """``knee`` (of the p99), ``knee-p50`` or ``capacity``."""
    ratio: float | None
    low: float | None
    high: float | None
    censored: float
    """The share of bootstrap draws left out (a knee beyond the measured rates)."""


def knee_point(curve: LoadCurve) -> LoadPoint:
    """The measured point that speaks for the knee: the first whose p99 reached the knee's
    multiple (the knee lies between it and the point before), else the highest load."""
    found = _knee_index([p.p99_us for p in curve.points], KNEE_FACTOR)
    return curve.points[-1 if found is None else found[0]]


def offered_label(rate: float) -> str:
    """The ``offered`` label of an open loop offered ``rate`` (as its options write it)."""
    return f"{rate:g}/s"


def capacities_found(samples: Iterable[Sample]) -> dict[str, list[float]]:
    """The baseline's capacities found first (``run.capacity``: ``capacity_tps``), each
    run's value, by configuration (as a curve's: ``config_of``)."""
    out: dict[str, list[float]] = {}
    for s in samples:
        if s.metric == "capacity_tps":
            out.setdefault(config_of(s.labels), []).append(s.value)
    return out


def rate_of(label: str) -> float | None:
    """``2000/s`` -> 2000.0 (None when the label is not a rate)."""
    text = label.removesuffix("/s")
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def _knee_index(p99: Sequence[float], factor: float) -> tuple[int, float] | None:
    """The first index whose p99 reaches ``factor`` times the lowest p99 before it, with that
    lowest p99 (the low-load value)."""
    low = math.inf
    for k, value in enumerate(p99):
        if k and value >= factor * low:
            return k, low
        low = min(low, value)
    return None


def knee_of(offered: Sequence[float], p99: Sequence[float],
            factor: float = KNEE_FACTOR) -> float | None:
    """The offered rate at which ``p99`` (sorted by ``offered``) first reaches ``factor``
    times its low-load value (the lowest p99 at the loads below), log-interpolated; None when
    it never does or there is one rate."""
    if len(offered) < 2 or not p99 or not min(p99) > 0:
        return None
    found = _knee_index(p99, factor)
    if found is None:
        return None
    k, low = found
    target = factor * low
    lo, hi = math.log(p99[k - 1]), math.log(p99[k])
    share = 1.0 if hi == lo else (math.log(target) - lo) / (hi - lo)
    return offered[k - 1] + share * (offered[k] - offered[k - 1])


Cells = dict[tuple[str, float], dict[str, list[float]]]
"""(layer, offered rate) -> metric -> the repetitions' values."""


NOT_CONFIG = frozenset({
    "layer", OFFERED_LABEL, "repetition", "trial", "pair", "aa", "design", "rr.rate", "rr.share",
    "workload", "protocol", "placement", "loop", "flows", "client", "server"})
"""Labels that do not tell one configuration of a load sweep from another."""


def config_of(labels: Mapping[str, str]) -> str:
    """The configuration a sample belongs to: its labels besides layer, offered rate,
    repetition, round and design (``hosts=2, nodes=2``)."""
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in NOT_CONFIG)


def _cells(samples: Iterable[Sample], workload: str) -> dict[str, Cells]:
    """The open-loop samples of ``workload`` by configuration (``config_of``), then by
    (layer, rate)."""
    out: dict[str, Cells] = {}
    for s in samples:
        labels = s.labels
        if (s.metric not in CURVE_METRICS or labels.get("workload", "").removeprefix("probe-")
                != workload or labels.get("aa") == "b"
                or any(k in labels for k in ("cpu", "device", "netns", "cgroup", "interval"))):
            continue
        rate = rate_of(labels.get(OFFERED_LABEL, ""))
        if rate is None or not math.isfinite(s.value):
            continue
        cell = out.setdefault(config_of(labels), {}).setdefault((labels.get("layer", ""), rate), {})
        cell.setdefault(s.metric, []).append(s.value)
    return out


def _layer_cells(cells: Cells, layer: str) -> list[tuple[float, dict[str, list[float]]]]:
    """``layer``'s (offered rate, metric -> values) with a p99, by rate."""
    return sorted(((rate, values) for (lay, rate), values in cells.items()
                   if lay == layer and values.get("rtt_p99_us")), key=lambda rv: rv[0])


def _curve(layer: str, config: str, cells: Cells) -> LoadCurve | None:
    points = []
    for rate, values in _layer_cells(cells, layer):
        med = {m: float(np.median(values[m])) if values.get(m) else math.nan
               for m in CURVE_METRICS}
        points.append(LoadPoint(rate, med["rtt_p50_us"], med["rtt_p99_us"], med["tps"],
                                med["behind"], len(values["rtt_p99_us"])))
    if not points:
        return None
    rates = [p.offered for p in points]
    knee = knee_of(rates, [p.p99_us for p in points])
    knee_p50 = knee_of(rates, [p.p50_us for p in points])
    achieved = [p.achieved for p in points if math.isfinite(p.achieved)]
    # a last point whose repetitions' behind share is unknown (NaN) did not fall behind
    last = points[-1].behind_share
    kept_up = math.isnan(last) or last < 0.5
    return LoadCurve(layer, config, tuple(points), knee, max(achieved) if achieved else math.nan,
                     kept_up, knee_p50)


def _curves(cells_by_config: Mapping[str, Cells]) -> list[LoadCurve]:
    out = []
    for config, cells in cells_by_config.items():
        for layer in sorted({lay for lay, _ in cells}):
            curve = _curve(layer, config, cells)
            if curve is not None and len(curve.points) >= 2:
                out.append(curve)
    return out


def load_curves(samples: Iterable[Sample], workload: str = "rr") -> list[LoadCurve]:
    """Every layer's curve, per configuration (see the module docstring), for the layers
    measured at two offered rates or more."""
    return _curves(_cells(samples, workload))


@dataclass(frozen=True)
class _Draw:
    """One bootstrap draw of a layer's knees and capacity."""

    knee: float | None
    knee_p50: float | None
    capacity: float


def _draw_curve(rng: np.random.Generator, cells: Cells, layer: str) -> _Draw:
    """One bootstrap draw of ``layer``'s curve: each rate's repetitions resampled (the same
    draw for the p50 and the p99 of a repetition)."""
    rates, p99s, p50s, caps = [], [], [], []
    for rate, values in _layer_cells(cells, layer):
        p99 = np.asarray(values["rtt_p99_us"])
        picked = rng.integers(0, p99.size, p99.size)
        rates.append(rate)
        p99s.append(float(np.median(p99[picked])))
        p50 = np.asarray(values.get("rtt_p50_us", []))
        p50s.append(float(np.median(p50[picked])) if p50.size == p99.size else math.nan)
        if values.get("tps"):
            tps = np.asarray(values["tps"])
            caps.append(float(np.median(rng.choice(tps, tps.size))))
    knee_p50 = knee_of(rates, p50s) if all(math.isfinite(v) for v in p50s) else None
    return _Draw(knee_of(rates, p99s), knee_p50, max(caps) if caps else math.nan)


def load_ratios(samples: Iterable[Sample], baseline: str = "host", workload: str = "rr",
                seed: int = 0) -> dict[str, list[LoadRatio]]:
    """Per configuration, each layer's knee and capacity over the baseline's (see the module
    docstring); a configuration without the baseline's curve has none."""
    return analyse_load(samples, baseline, workload, seed)[1]


def analyse_load(samples: Iterable[Sample], baseline: str = "host", workload: str = "rr",
                 seed: int = 0) -> tuple[list[LoadCurve], dict[str, list[LoadRatio]]]:
    """The curves (``load_curves``) and their ratios (``load_ratios``), the samples read
    once."""
    cells_of = _cells(samples, workload)
    curves = _curves(cells_of)
    by_config: dict[str, dict[str, LoadCurve]] = {}
    for c in curves:
        by_config.setdefault(c.config, {})[c.layer] = c
    out: dict[str, list[LoadRatio]] = {}
    for config, layers in by_config.items():
        base = layers.get(baseline)
        if base is None:
            continue
        rng = np.random.default_rng(seed)
        cells = cells_of[config]
        rows = []
        for layer in sorted(layers):
            if layer == baseline:
                continue
            mine = layers[layer]
            draws = [(_draw_curve(rng, cells, layer), _draw_curve(rng, cells, baseline))
                     for _ in range(BOOTSTRAP_DRAWS)]
            knees = [m.knee / b.knee for m, b in draws if m.knee is not None and b.knee is not None]
            knees_p50 = [m.knee_p50 / b.knee_p50 for m, b in draws
                         if m.knee_p50 is not None and b.knee_p50 is not None]
            caps = [m.capacity / b.capacity for m, b in draws
                    if b.capacity > 0 and math.isfinite(m.capacity)]
            rows.append(_ratio(layer, "knee", mine.knee, base.knee, knees))
            rows.append(_ratio(layer, "knee-p50", mine.knee_p50, base.knee_p50, knees_p50))
            bounded = mine.kept_up or base.kept_up  # a lower bound has no ratio
            rows.append(_ratio(layer, "capacity", None if bounded else mine.capacity,
                               base.capacity, [] if bounded else caps))
        out[config] = rows
    return curves, out


def _ratio(layer: str, what: str, mine: float | None, base: float | None,
           draws: Sequence[float]) -> LoadRatio:
    ratio = mine / base if mine is not None and base is not None and base > 0 else None
    censored = 1.0 - len(draws) / BOOTSTRAP_DRAWS
    if not draws or ratio is None:
        return LoadRatio(layer, what, ratio, None, None, censored)
    low, high = np.percentile(draws, [2.5, 97.5])
    return LoadRatio(layer, what, ratio, float(low), float(high), censored)


def by_layer(ratios: Sequence[LoadRatio]) -> Mapping[str, dict[str, LoadRatio]]:
    """``{layer: {"knee": ..., "knee-p50": ..., "capacity": ...}}``."""
    out: dict[str, dict[str, LoadRatio]] = {}
    for r in ratios:
        out.setdefault(r.layer, {})[r.what] = r
    return out
