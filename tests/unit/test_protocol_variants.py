"""A workload run over TCP and over UDP in one scenario is two workloads in the headline,
never one column pooling a TCP goodput with a UDP one."""

from __future__ import annotations

from vnetbench.report.tables import headline_table
from vnetbench.results.model import Sample


def runs(layer: str, protocol: str, gbps: float) -> list[Sample]:
    return [Sample("goodput_bps", gbps * 1e9 * (1 + 0.01 * i), "bit/s",
                   {"layer": layer, "workload": "iperf3", "protocol": protocol, "nodes": "2",
                    "hosts": "1", "repetition": str(i)}, i) for i in range(6)]


def test_tcp_and_udp_runs_of_one_workload_are_separate_columns() -> None:
    data = [*runs("host", "tcp", 17.0), *runs("host", "udp", 0.2),
            *runs("bridge", "tcp", 14.0), *runs("bridge", "udp", 0.2)]
    table = headline_table(data)
    assert table is not None
    workloads = {c.workload for c in table.columns}
    assert workloads == {"iperf3", "iperf3 (protocol=udp)"}
    native = {c.workload: cell.median for (layer, c), cell in table.cells.items()
              if layer == "host"}
    assert 16e9 < native["iperf3"] < 18e9  # not a pool of 17 Gbit/s and 0.2 Gbit/s
    assert 0.19e9 < native["iperf3 (protocol=udp)"] < 0.21e9
