"""Unit tests of the MPI workload's result parser and options, on recorded real output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vnetbench.workloads.mpi import MPI_WORKLOADS, STATS, MpiOptions, parse_mpi_output, to_samples
from vnetbench.workloads.mpi_agent import parse_args

DATA = Path(__file__).resolve().parents[1] / "data" / "mpi"


@pytest.mark.parametrize(("name", "test", "ranks"), [
    ("pingpong_host_8ranks.json", "pingpong", 8),
    ("barrier_vxlan_8ranks.json", "barrier", 8),
    ("barrier_bridge_3ranks.json", "barrier", 3),
    ("allreduce_macvlan_4ranks.json", "allreduce", 4),
])
def test_recorded_results(name: str, test: str, ranks: int) -> None:
    out = parse_mpi_output((DATA / name).read_text())
    assert out["test"] == test and out["ranks"] == ranks and out["unit"] == "us"
    values = [float(out[s]) for s in ("min", "p1", "p25", "p50", "p75", "p90", "p99", "p999", "max")]
    assert values == sorted(values)
    assert float(out["min"]) > 0
    assert float(out["min"]) <= float(out["mean"]) <= float(out["max"])
    assert float(out["stddev"]) >= 0


def test_samples_named_by_test() -> None:
    out = parse_mpi_output((DATA / "barrier_vxlan_8ranks.json").read_text())
    samples = {s.metric: s for s in to_samples(out, {"x": "y"})}
    assert {f"sync_{s}_us" for s in STATS} <= set(samples)
    assert samples["sync_p50_us"].unit == "us"
    assert samples["sync_p50_us"].labels == {"x": "y", "test": "barrier", "ranks": "8", "size": "8"}
    assert samples["sync_iterations"].value == 500
    pp = to_samples(parse_mpi_output((DATA / "pingpong_host_8ranks.json").read_text()), {})
    assert "rtt_p50_us" in {s.metric for s in pp}
    ar = to_samples(parse_mpi_output((DATA / "allreduce_macvlan_4ranks.json").read_text()), {})
    assert "allreduce_p99_us" in {s.metric for s in ar}


def test_result_found_among_noise() -> None:
    result = (DATA / "barrier_bridge_3ranks.json").read_text()
    noise = (DATA / "barrier_bridge_3ranks.stderr").read_text()
    assert parse_mpi_output(noise + result + "trailing words\n")["test"] == "barrier"


def test_failed_job_raises() -> None:
    with pytest.raises(ValueError, match="no vnb-mpi-bench result"):
        parse_mpi_output((DATA / "failed_unreachable.stderr").read_text())
    with pytest.raises(ValueError):
        parse_mpi_output("")


def test_incomplete_result_raises() -> None:
    data = json.loads((DATA / "pingpong_host_8ranks.json").read_text())
    del data["p99"]
    with pytest.raises(ValueError, match="p99"):
        parse_mpi_output(json.dumps(data))


def test_options() -> None:
    o = MpiOptions.model_validate({"test": "barrier", "duration": "2s", "size": "1k"})
    assert o.duration == 2.0 and o.size == 1024 and o.iterations is None
    with pytest.raises(ValueError, match="not both"):
        MpiOptions.model_validate({"iterations": 10, "duration": "1s"})
    with pytest.raises(ValueError):
        MpiOptions.model_validate({"test": "alltoall"})
    model, create = MPI_WORKLOADS["mpi"]
    assert model is MpiOptions
    assert create(o).name == "mpi-barrier"


def test_agent_arguments() -> None:
    path, host, words = parse_args(["--map", "/x/hosts.json", "10.1.64.2", "orted", "-mca", "a", "b"])
    assert (str(path), host, words) == ("/x/hosts.json", "10.1.64.2", ["orted", "-mca", "a", "b"])
    path, host, words = parse_args(["--map=/m", "-x", "h", "echo", "hi"])
    assert (str(path), host, words) == ("/m", "h", ["echo", "hi"])
    with pytest.raises(ValueError):
        parse_args(["h", "cmd"])
