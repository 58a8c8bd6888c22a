"""Unit tests of the MPI workload's result parser and options, on recorded real output."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from vnetbench.errors import WorkloadError
from vnetbench.workloads.mpi.agent import parse_args
from vnetbench.workloads.mpi.workload import (
    GAP_PREFIXES,
    KERNELS,
    MPI_WORKLOADS,
    STATS,
    MpiOptions,
    MpiWorkload,
    check_verified,
    narrow_for_host,
    parse_mpi_output,
    rank_nodes,
    to_samples,
)

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


# ---- application kernels ---------------------------------------------------------------------
# <kernel>_S_bridge_4ranks.json: real output of each kernel, class S, on a bridge lab of 4 nodes
# on 2 hosts. lu_failed_verification.*: real output of a build with a fault injected on purpose
# (LU's lower sweep sent the wrong plane east): the kernel caught it and rank 0 exited 1.

KERNEL_SAMPLES = ("mpi_runtime_s", "mpi_comm_s", "mpi_messages_count", "mpi_bytes",
                  "mpi_mean_message_bytes")


def kernel_result(kernel: str) -> dict[str, float | str | bool]:
    return parse_mpi_output((DATA / f"{kernel}_S_bridge_4ranks.json").read_text())


@pytest.mark.parametrize("kernel", KERNELS)
def test_recorded_kernel_results(kernel: str) -> None:
    out = kernel_result(kernel)
    assert out["test"] == out["kernel"] == kernel
    assert out["class"] == "S" and out["ranks"] == 4 and out["verified"] is True
    assert out["errors"] == 0
    assert 0 < float(out["comm_s"]) <= float(out["runtime_s"]) < 1.0
    assert int(out["messages"]) > 0 and int(out["bytes"]) > 0
    assert isinstance(out["iterations"], int) and out["iterations"] >= 1


def test_kernel_samples() -> None:
    samples = {s.metric: s for s in to_samples(kernel_result("ft"), {"layer": "bridge"})}
    assert set(samples) == set(KERNEL_SAMPLES)
    assert samples["mpi_runtime_s"].unit == samples["mpi_comm_s"].unit == "s"
    assert samples["mpi_messages_count"].unit == "count"
    assert samples["mpi_bytes"].unit == samples["mpi_mean_message_bytes"].unit == "B"
    assert samples["mpi_runtime_s"].labels == {"layer": "bridge", "test": "ft", "kernel": "ft",
                                               "class": "S", "ranks": "4"}
    # 6 iterations of 4 ranks: an alltoall (3 blocks each) and a checksum allreduce (2 steps)
    assert samples["mpi_messages_count"].value == 6 * 4 * (3 + 2)
    mean = samples["mpi_bytes"].value / samples["mpi_messages_count"].value
    assert samples["mpi_mean_message_bytes"].value == pytest.approx(mean)
    assert samples["mpi_runtime_s"].value == 0.141026


def test_kernel_patterns_differ() -> None:
    """The recorded runs show the patterns the kernels were designed with."""
    mean = {}
    count = {}
    for kernel in KERNELS:
        m = {s.metric: s.value for s in to_samples(kernel_result(kernel), {})}
        mean[kernel], count[kernel] = m["mpi_mean_message_bytes"], m["mpi_messages_count"]
    assert mean["lu"] * 100 < mean["ft"] and count["lu"] > 40 * count["ft"]
    assert mean["bt"] > mean["sp"]
    assert max(mean, key=lambda k: mean[k]) == "ft"


def test_failed_kernel_is_named() -> None:
    text = (DATA / "lu_failed_verification.json").read_text()
    noise = (DATA / "lu_failed_verification.stderr").read_text()
    out = parse_mpi_output(noise + text)
    assert out["verified"] is False and out["kernel"] == "lu" and int(out["errors"]) > 0
    assert "FAILED verification" in noise
    with pytest.raises(WorkloadError, match=r"MPI kernel lu \(class S, 4 ranks\) failed its verification"):
        to_samples(out, {})
    with pytest.raises(WorkloadError, match="kernel lu"):
        check_verified(out)
    check_verified(kernel_result("lu"))


def test_incomplete_kernel_result_raises() -> None:
    data = json.loads((DATA / "cg_S_bridge_4ranks.json").read_text())
    for field in ("runtime_s", "verified"):
        broken = {k: v for k, v in data.items() if k != field}
        with pytest.raises(ValueError, match=field):
            parse_mpi_output(json.dumps(broken))
    with pytest.raises(ValueError, match="not a bool"):
        parse_mpi_output(json.dumps({**data, "verified": "true"}))
    no_messages = parse_mpi_output(json.dumps({**data, "messages": 0, "bytes": 0}))
    assert {s.metric: s.value for s in to_samples(no_messages, {})}["mpi_mean_message_bytes"] == 0


def test_kernel_options() -> None:
    o = MpiOptions.model_validate({"test": "cg", "class": "W", "iterations": 3})
    assert o.size_class == "W" and o.is_kernel
    assert o.labels() == {"test": "cg", "kernel": "cg", "class": "W", "placement": "in-layer"}
    assert MpiOptions.model_validate({"test": "lu"}).size_class == "S"
    # scenarios store the dump (field names) and validate it again
    assert MpiOptions.model_validate(o.model_dump()) == o
    assert MpiOptions.model_validate({"test": "is", "size_class": "A"}).size_class == "A"
    with pytest.raises(ValueError):
        MpiOptions.model_validate({"test": "cg", "class": "B"})
    with pytest.raises(ValueError):
        MpiOptions.model_validate({"test": "np"})
    with pytest.raises(ValueError, match="ft kernel runs a number of iterations"):
        MpiOptions.model_validate({"test": "ft", "duration": "2s"})
    assert MpiOptions(test="barrier").labels() == {"test": "barrier", "placement": "in-layer"}
    model, create = MPI_WORKLOADS["mpi"]
    assert create(model.model_validate({"test": "mg"})).name == "mpi-mg"


def workload_argv(options: MpiOptions, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The benchmark's own arguments in the mpirun command line of a 4-node lab."""
    monkeypatch.setattr("vnetbench.workloads.mpi.workload._mpirun", lambda: "mpirun")
    workload = MpiWorkload(options)
    workload._dir, workload._bench = Path("/x"), Path("/bin/vnb-mpi-bench")
    argv = workload.argv(SimpleNamespace(nodes=[0, 1, 2, 3]))  # type: ignore[arg-type]
    assert argv[argv.index("-np") + 1] == "4"
    return argv[argv.index("/bin/vnb-mpi-bench") + 1:]


def test_kernel_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    assert workload_argv(MpiOptions.model_validate({"test": "sp", "class": "A"}), monkeypatch) == [
        "--test", "sp", "--class", "A"]
    assert workload_argv(MpiOptions(test="bt", iterations=7, warmup=0), monkeypatch) == [
        "--test", "bt", "--class", "S", "--iterations", "7", "--warmup", "0"]
    assert workload_argv(MpiOptions(test="pingpong"), monkeypatch) == [
        "--test", "pingpong", "--size", "8", "--warmup", "100", "--iterations", "1000"]
    assert workload_argv(MpiOptions(test="barrier", duration=2.0, warmup=5), monkeypatch) == [
        "--test", "barrier", "--size", "8", "--warmup", "5", "--duration", "2"]


# ---- the constant-rate gap test and mixed placement --------------------------------------------
# gaps_bridge_2ranks_rank0host.*: real output of `test: gaps, rate: 1000, size: 64, duration: 2s,
# rank0: host` on a bridge lab of 2 nodes on 2 hosts (rank 0 in host 0's namespace), with
# mpirun's stderr; gaps_bridge_4ranks.json: `rate: 1000, duration: 2s` on 4 nodes, rank 0 in
# node 0; pingpong_bridge_2ranks_rank0host.json: 1000 round trips, rank 0 on host 0.

GAP_FILES = ("gaps_bridge_2ranks_rank0host.json", "gaps_bridge_4ranks.json")


@pytest.mark.parametrize("name", GAP_FILES)
def test_recorded_gap_results(name: str) -> None:
    out = parse_mpi_output((DATA / name).read_text())
    assert out["test"] == "gaps" and out["rate"] == 1000 and out["period_us"] == 1000
    assert out["sent"] == out["received"] == out["gaps"] == 2000 and out["warmup"] == 100
    assert 0 <= int(out["late"]) < 100
    for prefix in GAP_PREFIXES:
        values = [float(out[f"{prefix}_{s}"]) for s in STATS if s not in ("mean", "stddev")]
        assert values == sorted(values), prefix
        assert float(out[f"{prefix}_stddev"]) >= 0
    for stat in ("min", "p1", "p50", "p99", "max", "mean"):  # deviation = gap - period
        assert float(out[f"recv_gap_dev_{stat}"]) == pytest.approx(
            float(out[f"recv_gap_{stat}"]) - 1000.0, abs=0.002)
    assert float(out["recv_gap_stddev"]) == float(out["recv_gap_dev_stddev"])
    # absolute deadlines: the mean gap is the period however late single wake-ups were
    assert float(out["send_gap_mean"]) == pytest.approx(1000.0, rel=1e-3)
    assert float(out["send_gap_p50"]) == pytest.approx(1000.0, rel=0.10)
    assert float(out["recv_gap_p50"]) == pytest.approx(1000.0, rel=0.10)
    assert float(out["send_gap_min"]) > 0 and float(out["recv_gap_min"]) >= 0


def test_gap_samples() -> None:
    out = parse_mpi_output((DATA / "gaps_bridge_2ranks_rank0host.json").read_text())
    samples = {s.metric: s for s in to_samples(out, {"layer": "bridge"})}
    expected = {f"{p}_{s}_us" for p in GAP_PREFIXES for s in STATS}
    assert set(samples) == expected | {"gaps_sent", "gaps_received", "gaps_late"}
    assert all(samples[m].unit == "us" for m in expected)
    assert samples["gaps_sent"].unit == samples["gaps_late"].unit == "count"
    assert samples["gaps_sent"].value == samples["gaps_received"].value == 2000
    assert samples["send_gap_p50_us"].value == 999.663
    assert samples["recv_gap_dev_p99_us"].value == 262.837
    assert samples["recv_gap_dev_p1_us"].value < 0 < samples["recv_gap_p1_us"].value
    assert samples["recv_gap_p50_us"].labels == {"layer": "bridge", "test": "gaps", "ranks": "2",
                                                 "size": "64", "rate": "1000"}
    four = to_samples(parse_mpi_output((DATA / "gaps_bridge_4ranks.json").read_text()), {})
    assert {s.labels["ranks"] for s in four} == {"4"} and {s.labels["size"] for s in four} == {"8"}


def test_gap_result_among_noise_and_incomplete() -> None:
    text = (DATA / "gaps_bridge_2ranks_rank0host.json").read_text()
    noise = (DATA / "gaps_bridge_2ranks_rank0host.stderr").read_text()
    assert "btl_tcp_if_include" in noise
    assert parse_mpi_output(noise + text + noise)["test"] == "gaps"
    data = json.loads(text)
    for field in ("recv_gap_dev_p99", "send_gap_p50", "recv_gap_max", "received", "rate"):
        broken = {k: v for k, v in data.items() if k != field}
        with pytest.raises(ValueError, match=field):
            parse_mpi_output(json.dumps(broken))
    # a gap result need not have the other micro-benchmarks' bare stats
    assert "p50" not in data


def test_rank0_host_pingpong_recorded() -> None:
    out = parse_mpi_output((DATA / "pingpong_bridge_2ranks_rank0host.json").read_text())
    assert out["test"] == "pingpong" and out["ranks"] == 2 and out["iterations"] == 1000
    assert 0 < float(out["min"]) <= float(out["p50"]) <= float(out["max"])


def test_gap_options() -> None:
    o = MpiOptions.model_validate({"test": "gaps", "rate": 2000, "duration": "3s", "size": "1k"})
    assert (o.gap_rate, o.gap_messages, o.gap_warmup, o.size) == (2000.0, 6000, 100, 1024)
    assert o.labels() == {"test": "gaps", "rate": "2000", "placement": "in-layer"}
    default = MpiOptions(test="gaps")
    assert (default.gap_rate, default.gap_messages, default.gap_warmup) == (1000.0, 1000, 100)
    slow = MpiOptions.model_validate({"test": "gaps", "rate": 5, "iterations": 20})
    assert (slow.gap_messages, slow.gap_warmup) == (20, 1)
    assert MpiOptions.model_validate({"test": "gaps", "rate": 300}).gap_warmup == 30
    assert MpiOptions.model_validate({"test": "gaps", "warmup": 0}).gap_warmup == 0
    assert MpiOptions.model_validate(o.model_dump()) == o
    cases: list[tuple[dict[str, object], str]] = [
        ({"rate": 200_000}, "less than or equal"),
        ({"size": 2 * 1024**2}, "size"),
        ({"rate": 50_000, "size": 65536}, "B/s"),
        ({"iterations": 1}, "timed messages"),
        ({"rate": 100_000, "duration": "200s"}, "timed messages"),
        ({"rate": 10, "duration": "0.1s"}, "timed messages"),
        ({"iterations": 10_000_000, "warmup": 1}, "warmup"),
        ({"rate": 0}, "greater than")]
    for bad, match in cases:
        with pytest.raises(ValueError, match=match):
            MpiOptions.model_validate({"test": "gaps", **bad})
    with pytest.raises(ValueError, match="rate applies to the gaps test"):
        MpiOptions.model_validate({"test": "pingpong", "rate": 100})
    with pytest.raises(ValueError, match="rate applies"):
        MpiOptions.model_validate({"test": "cg", "rate": 100})


def test_placement_options() -> None:
    assert MpiOptions().rank0 == "node"
    host = MpiOptions.model_validate({"test": "pingpong", "rank0": "host"})
    assert host.labels() == {"test": "pingpong", "placement": "rank0-host"}
    gaps = MpiOptions.model_validate({"test": "gaps", "rate": 250, "rank0": "host"})
    assert gaps.labels() == {"test": "gaps", "rate": "250", "placement": "rank0-host"}
    assert MpiOptions.model_validate({"test": "lu", "rank0": "host"}).labels()["placement"] == \
        "rank0-host"
    with pytest.raises(ValueError):
        MpiOptions.model_validate({"rank0": "vm"})


def test_gap_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    assert workload_argv(MpiOptions(test="gaps"), monkeypatch) == [
        "--test", "gaps", "--rate", "1000.0", "--size", "8", "--warmup", "100",
        "--iterations", "1000"]
    options = MpiOptions.model_validate({"test": "gaps", "rate": 500, "duration": "2s",
                                         "size": 64, "rank0": "host"})
    assert workload_argv(options, monkeypatch) == [
        "--test", "gaps", "--rate", "500.0", "--size", "64", "--warmup", "50",
        "--iterations", "1000"]


def test_rank_nodes() -> None:
    nodes = [SimpleNamespace(name=f"n{i}", host=i % 2) for i in range(3)]
    hosts = {h: SimpleNamespace(name=f"h{h}", host=h) for h in range(2)}
    lab: Any = SimpleNamespace(nodes=nodes, host_node=lambda h: hosts[h])
    assert rank_nodes(lab, "node") == nodes
    assert rank_nodes(lab, "host") == [hosts[0], nodes[1], nodes[2]]
    assert lab.nodes == nodes  # the lab's own list is left alone


def test_narrow_for_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bridge lab: host 0 holds its nodes' gateway 10.1.64.1 besides its underlay address."""
    addresses = [ipaddress.IPv4Interface(a) for a in
                 ("127.0.0.1/8", "10.1.0.1/18", "10.1.64.1/24")]
    monkeypatch.setattr("vnetbench.workloads.mpi.workload._inet_addresses", lambda netns: addresses)

    def node(ip: str) -> Any:
        return SimpleNamespace(ip=ip, namespace=lambda needed_by: "ns")

    h0, n1, n2, n3 = node("10.1.0.1"), node("10.1.65.2"), node("10.1.64.3"), node("10.1.65.3")
    subnets = ["10.1.0.0/18", "10.1.64.0/24", "10.1.65.0/24"]
    assert narrow_for_host(h0, [h0, n1, n2, n3], subnets) == [
        "10.1.0.0/18", "10.1.64.2/31", "10.1.65.0/24"]
    # 2 nodes on 2 hosts: no rank in host 0's bridge subnet, nothing to narrow
    assert narrow_for_host(h0, [h0, n1], ["10.1.0.0/18", "10.1.65.0/24"]) == [
        "10.1.0.0/18", "10.1.65.0/24"]
    # a node next to the gateway (10.1.64.0/31 would hold 10.1.64.1): the subnet stays
    assert narrow_for_host(h0, [h0, node("10.1.64.0")], ["10.1.0.0/18", "10.1.64.0/24"]) == [
        "10.1.0.0/18", "10.1.64.0/24"]
