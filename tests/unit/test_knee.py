"""Unit tests of knee detection on synthetic scaling curves with a known knee."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vnetbench.report.knee import find_knee
from vnetbench.results.stats import median
from vnetbench.results.store import load_run

NODES = [2, 4, 8, 12, 16, 20, 24, 28, 32]
EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "evidence"


def test_linear_to_16_then_degraded() -> None:
    ys = [1000.0 * n if n <= 16 else 16000.0 - 300.0 * (n - 16) for n in NODES]
    knee = find_knee(NODES, ys)
    assert knee is not None
    assert knee.x == 16 and knee.index == 4 and knee.y == 16000
    assert knee.slope_before == pytest.approx(1000.0)
    assert knee.slope_after == pytest.approx(-300.0)
    assert knee.improvement == pytest.approx(1.0)


def test_knee_survives_noise() -> None:
    rng = np.random.default_rng(3)
    ys = [1000.0 * n if n <= 16 else 16000.0 + 100.0 * (n - 16) for n in NODES]
    noisy = list(np.array(ys) * (1.0 + rng.normal(0.0, 0.02, len(ys))))
    knee = find_knee(NODES, noisy)
    assert knee is not None and knee.x == 16


def test_latency_hockey_stick() -> None:
    ys = [50.0 if n <= 8 else 50.0 + 10.0 * (n - 8) for n in NODES]
    knee = find_knee(NODES, ys)
    assert knee is not None and knee.x == 8


@pytest.mark.parametrize("ys", [
    [5.0] * 9,                                      # flat
    [3.0 * n + 1.0 for n in NODES],                 # straight line
    [100.0 + d for d in (0.5, -1.0, 1.2, -0.3, 0.8, -1.1, 0.2, 0.9, -0.6)],  # flat + noise
])
def test_no_knee(ys: list[float]) -> None:
    assert find_knee(NODES, ys) is None


def test_too_few_points_and_bad_input() -> None:
    assert find_knee([1, 2, 3], [1.0, 5.0, 5.0]) is None
    with pytest.raises(ValueError):
        find_knee([1, 2], [1.0])


def test_repeated_x_uses_medians() -> None:
    xs = [n for n in NODES for _ in range(3)]
    ys = [(1000.0 * n if n <= 16 else 16000.0) * k for n in NODES for k in (0.99, 1.0, 1.5)]
    knee = find_knee(xs, ys)
    assert knee is not None and knee.x == 16


def test_recorded_sweep_has_knee_at_16() -> None:
    samples = load_run(EVIDENCE / "run_sweep").samples
    for layer in ("host", "bridge", "vxlan"):
        xs = sorted({int(s.labels["nodes"]) for s in samples})
        ys = [median(s.value for s in samples if s.metric == "tps"
                     and s.labels["layer"] == layer and int(s.labels["nodes"]) == x) for x in xs]
        knee = find_knee(xs, ys)
        assert knee is not None and knee.x == 16, layer
