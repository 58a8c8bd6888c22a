"""LatencyHistogram / HistogramRecord: parsing the probe's buckets, merging, percentiles with
hdrhistogram's ``value_at_quantile`` semantics (checked by hand and against the probe's own
percentiles in a recorded real run), JSON round trips."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from vnetbench.errors import WorkloadError
from vnetbench.results.histogram import HistogramRecord, LatencyHistogram

DATA = Path(__file__).resolve().parents[1] / "data" / "probe"
QUANTILES = {"p1": 1.0, "p25": 25.0, "p50": 50.0, "p75": 75.0, "p90": 90.0, "p99": 99.0,
             "p999": 99.9}


def _hist_of(values_us: list[float]) -> LatencyHistogram:
    """A histogram whose buckets are the distinct values themselves (exact buckets)."""
    counts = Counter(round(v * 1000) for v in values_us)
    return LatencyHistogram.from_buckets_ns([[v, c] for v, c in counts.items()])


def _end(name: str) -> dict[str, Any]:
    last = (DATA / name).read_text().strip().splitlines()[-1]
    end: dict[str, Any] = json.loads(last)
    return end


def test_from_buckets_ns_converts_sorts_and_merges_equal_values() -> None:
    h = LatencyHistogram.from_buckets_ns([[3000, 2], [1500, 1], [3000, 1], [2000, 0]])
    assert h.buckets == ((1.5, 1), (3.0, 3))
    assert h.count == 4
    assert LatencyHistogram.from_buckets_ns([]).count == 0
    assert LatencyHistogram.from_buckets_ns(((0, 1.0),)).buckets == ((0.0, 1),)


@pytest.mark.parametrize("bad", [
    None, "[[1, 2]]", {"1": 2}, [[1, 2, 3]], [[1]], [1, 2], [[-1, 2]], [[1, -2]],
    [["1", 2]], [[1, 2.5]], [[math.nan, 1]], [[math.inf, 1]], [[True, 1]], [[1, None]],
])
def test_malformed_buckets_raise(bad: object) -> None:
    with pytest.raises(WorkloadError, match="latency histogram"):
        LatencyHistogram.from_buckets_ns(bad)


def test_percentile_by_hand() -> None:
    # 10 values: 10, 20, 20, 30, 40, 40, 40, 50, 60, 100 (us)
    h = _hist_of([10, 20, 20, 30, 40, 40, 40, 50, 60, 100])
    assert h.count == 10
    assert h.percentile(0) == 10.0        # the smallest value
    assert h.percentile(10) == 10.0       # ceil(1.0) = 1st value
    assert h.percentile(10.5) == 20.0     # ceil(1.05) = 2nd
    assert h.percentile(30) == 20.0       # 3rd
    assert h.percentile(31) == 30.0       # ceil(3.1) = 4th
    assert h.percentile(50) == 40.0       # 5th
    assert h.percentile(70) == 40.0       # 7th
    assert h.percentile(70.1) == 50.0     # ceil(7.01) = 8th
    assert h.percentile(99.9) == 100.0    # ceil(9.99) = 10th
    assert h.percentile(100) == 100.0
    # q*count lands on an integer only if q/100 is taken like the probe's 0.999: 1000 values
    many = _hist_of([1.0] * 999 + [2.0])
    assert many.percentile(99.9) == 1.0   # ceil(0.999 * 1000) = 999th value
    assert many.percentile(99.91) == 2.0


def test_percentile_edge_cases() -> None:
    assert math.isnan(LatencyHistogram().percentile(50))
    h = _hist_of([5.0])
    assert h.percentile(0) == h.percentile(50) == h.percentile(100) == 5.0
    for bad in (-0.1, 100.1, math.nan):
        with pytest.raises(ValueError):
            h.percentile(bad)


def test_merge_adds_counts_and_equals_the_union() -> None:
    a = [12.5, 12.5, 13.0, 20.0, 55.5, 100.0, 100.0, 250.0]
    b = [11.0, 12.5, 20.0, 20.0, 21.0, 99.0, 300.0]
    merged = LatencyHistogram.merge([_hist_of(a), _hist_of(b)])
    union = _hist_of(a + b)
    assert merged == union
    assert merged.count == len(a) + len(b)
    assert dict(merged.buckets)[12.5] == 3 and dict(merged.buckets)[20.0] == 3
    for q in [0, 1, 5, 10, 25, 33.3, 50, 66.7, 75, 90, 95, 99, 99.9, 100]:
        assert merged.percentile(q) == union.percentile(q), q
    # merged percentiles differ from any average of the parts' percentiles
    assert merged.percentile(50) == 20.0
    assert LatencyHistogram.merge([]) == LatencyHistogram()
    assert LatencyHistogram.merge([_hist_of(a)]) == _hist_of(a)


def test_percentiles_match_the_probe_on_a_recorded_run() -> None:
    rtt = _end("rr-hist.jsonl")["rtt_us"]
    h = LatencyHistogram.from_buckets_ns(rtt["hist"])
    assert h.count == _end("rr-hist.jsonl")["transactions"]
    for key, q in QUANTILES.items():
        # the probe clamps value_at_quantile to the exact min / max it also tracks
        assert min(max(h.percentile(q), rtt["min"]), rtt["max"]) == rtt[key], key
    # a histogram merged with itself has the same percentiles
    twice = LatencyHistogram.merge([h, h])
    assert twice.count == 2 * h.count
    assert all(twice.percentile(q) == h.percentile(q) for q in QUANTILES.values())


def test_barrier_sync_histogram_matches_the_probe() -> None:
    end = _end("barrier-hist-rank0.jsonl")
    h = LatencyHistogram.from_buckets_ns(end["sync_us"]["hist"])
    assert h.count == end["rounds"]
    for key, q in QUANTILES.items():
        assert min(max(h.percentile(q), end["sync_us"]["min"]),
                   end["sync_us"]["max"]) == end["sync_us"][key], key


def test_merging_two_real_halves() -> None:
    h = LatencyHistogram.from_buckets_ns(_end("rr-hist.jsonl")["rtt_us"]["hist"])
    first = LatencyHistogram(h.buckets[::2])
    second = LatencyHistogram(h.buckets[1::2])
    assert LatencyHistogram.merge([second, first]) == h


def test_json_round_trip() -> None:
    h = LatencyHistogram.from_buckets_ns(_end("rr-hist.jsonl")["rtt_us"]["hist"])
    data = h.to_json()
    assert data["unit"] == "us"
    assert data["buckets"][0] == [13.663, 1]
    assert LatencyHistogram.from_json(json.loads(json.dumps(data))) == h
    with pytest.raises(WorkloadError, match="unit"):
        LatencyHistogram.from_json({"unit": "ns", "buckets": []})
    with pytest.raises(WorkloadError):
        LatencyHistogram.from_json({"unit": "us", "buckets": [[1.0, -1]]})
    with pytest.raises(WorkloadError):
        LatencyHistogram.from_json([[1.0, 1]])


def test_record_labels_and_round_trip() -> None:
    h = _hist_of([1.0, 2.0, 2.0])
    rec = HistogramRecord("rtt_us", "us", {"layer": "bridge"}, h)
    more = rec.with_labels(repetition="3", layer="veth")
    assert more.labels == {"layer": "veth", "repetition": "3"}
    assert rec.labels == {"layer": "bridge"}
    line = more.to_json()
    assert "\n" not in line
    data = json.loads(line)
    assert list(data) == sorted(data)
    assert data["hist"] == {"unit": "us", "buckets": [[1.0, 1], [2.0, 2]]}
    assert HistogramRecord.from_dict(data) == more
    with pytest.raises(WorkloadError):
        HistogramRecord.from_dict({"unit": "us", "hist": h.to_json()})
    with pytest.raises(WorkloadError):
        HistogramRecord.from_dict({"metric": "rtt_us", "hist": {"buckets": "x"}})
