"""Unit tests of the collectors' parsers and deltas on /proc text recorded on a Debian 12 VM."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetbench.collectors import (
    CgroupCpuCollector,
    CpuCollector,
    NetDevCollector,
    Snapshot,
    TcpCollector,
    UdpCollector,
    read_root,
    recorded_reader,
)
from vnetbench.collectors.base import Reader
from vnetbench.collectors.cgroup import parse_cgroup_cpu
from vnetbench.collectors.cpu import parse_proc_stat, parse_softirqs
from vnetbench.collectors.netdev import parse_net_dev
from vnetbench.collectors.perf import busy_shares, parse_report
from vnetbench.collectors.tcp import parse_snmp, snake
from vnetbench.errors import UnsupportedError
from vnetbench.results.model import Sample

PROC = Path(__file__).resolve().parents[1] / "data" / "evidence" / "proc"
LABELS = {"layer": "vxlan", "trial": "7"}


def text(name: str) -> str:
    return (PROC / name).read_text()


def phase_reader(files: dict[str, str]) -> tuple[dict[str, str], Reader]:
    """A reader for the root netns that serves PROC/<name>.<phase>; phase is switched."""
    state = {"phase": "before"}

    def read(netns: str | None, path: str) -> str:
        assert netns is None
        return text(f"{files[path]}.{state['phase']}")
    return state, read


def by(samples: list[Sample], metric: str, **labels: str) -> Sample:
    (match,) = [s for s in samples if s.metric == metric
                and all(s.labels.get(k) == v for k, v in labels.items())]
    return match


def test_parse_proc_stat() -> None:
    stat = parse_proc_stat(text("stat.before"))
    assert stat["cpu0"] == {"user": 3870, "nice": 0, "system": 2423, "idle": 95671,
                            "iowait": 23, "irq": 0, "softirq": 24, "steal": 7, "guest": 0,
                            "guest_nice": 0}
    assert stat["cpu"]["user"] == 9370 and set(stat) >= {"cpu", "cpu0", "cpu1", "system"}
    assert stat["system"]["ctxt"] == 573787


def test_parse_softirqs() -> None:
    irqs = parse_softirqs(text("softirqs.before"))
    assert irqs["NET_RX"] == {"cpu0": 3786, "cpu1": 5666}
    assert irqs["NET_TX"] == {"cpu0": 4, "cpu1": 0}


def test_cpu_collector_deltas() -> None:
    state, read = phase_reader({"/proc/stat": "stat", "/proc/softirqs": "softirqs"})
    col = CpuCollector(read, clk_tck=100)
    before = col.snapshot()
    state["phase"] = "after"
    after = col.snapshot()
    out = col.delta(before, after, LABELS)
    assert by(out, "cpu_core_user_s", cpu="0").value == pytest.approx(1.30)  # 4000-3870
    assert by(out, "cpu_core_sys_s", cpu="1").value == pytest.approx(0.19)  # 4116-4097
    assert by(out, "cpu_core_user_s", cpu="all").value == pytest.approx(2.54)
    assert by(out, "cpu_busy_s", cpu="0").value == pytest.approx(1.41)
    assert by(out, "cpu_softirq_s", cpu="1").value == 0.0
    assert by(out, "ctxt_switches").value == 578881 - 573787
    assert by(out, "net_rx_softirqs", cpu="0").value == 11
    assert by(out, "net_rx_softirqs", cpu="all").value == 22
    assert all(s.labels["layer"] == "vxlan" and s.labels["source"] == "proc_stat" for s in out)
    assert not any(s.metric in {"cpu_user_s", "cpu_sys_s"} for s in out)


def test_parse_net_dev() -> None:
    dev = parse_net_dev(text("net_dev.before"))
    assert set(dev) == {"lo", "ifb0", "ifb1", "eth0"}
    assert dev["eth0"]["rx_bytes"] == 367083220 and dev["eth0"]["rx_packets"] == 7514
    assert dev["eth0"]["tx_packets"] == 4312 and dev["eth0"]["tx_drop"] == 0
    assert len(dev["lo"]) == 16


def test_netdev_collector_recorded_deltas() -> None:
    state, read = phase_reader({"/proc/net/dev": "net_dev"})
    col = NetDevCollector(read)
    before = col.snapshot()
    state["phase"] = "after"
    after = col.snapshot()
    after = Snapshot(before.t_ns + 500_000_000, after.counters)  # 0.5 s later
    out = col.delta(before, after, LABELS)
    eth = {"netns": "root", "device": "eth0"}
    assert by(out, "rx_packets", **eth).value == 15
    assert by(out, "rx_bytes", **eth).value == 84039
    assert by(out, "tx_packets", **eth).value == 13
    assert by(out, "rx_pps", **eth).value == pytest.approx(30.0)
    assert by(out, "rx_mean_packet_bytes", **eth).value == pytest.approx(84039 / 15)
    assert by(out, "tx_mean_packet_bytes", **eth).value == pytest.approx(1612 / 13)
    assert not any(s.labels["device"] == "lo" for s in out)
    assert not any(s.metric == "rx_mean_packet_bytes" and s.labels["device"] == "ifb0"
                   for s in out)


DEV_TMPL = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
{rows}"""  # noqa: E501


def _dev(rows: dict[str, tuple[int, int, int, int]]) -> str:
    lines = [f"  {d}: {rb} {rp} 0 {rd} 0 0 0 0 {tb} {tb // 100} 0 0 0 0 0 0"
             for d, (rb, rp, rd, tb) in rows.items()]
    return DEV_TMPL.format(rows="\n".join(lines))


def test_netdev_namespaces_drops_and_resets() -> None:
    files: dict[tuple[str | None, str], str] = {
        ("ns-a", "/proc/net/dev"): _dev({"vxlan0": (1000, 10, 5, 5000), "veth0": (100, 1, 0, 100)})}
    col = NetDevCollector(recorded_reader(files), namespaces=["ns-a"])
    before = col.snapshot()
    files[("ns-a", "/proc/net/dev")] = _dev({"vxlan0": (3000, 30, 12, 9000),
                                             "veth0": (50, 1, 0, 100),  # reset
                                             "wg0": (700, 7, 1, 0)})  # appeared
    after = col.snapshot()
    out = col.delta(before, after)
    assert by(out, "rx_drops", netns="ns-a", device="vxlan0").value == 7
    assert by(out, "rx_bytes", netns="ns-a", device="vxlan0").value == 2000
    assert by(out, "rx_mean_packet_bytes", device="vxlan0").value == pytest.approx(100.0)
    assert by(out, "rx_bytes", device="veth0").value == 50  # counted from the reset
    assert by(out, "rx_packets", device="wg0").value == 7
    only = NetDevCollector(recorded_reader(files), namespaces=["ns-a"], devices=["wg0"])
    assert set(only.snapshot().counters) == {"ns-a\twg0"}


def test_parse_snmp_and_netstat() -> None:
    snmp = parse_snmp(text("net_snmp.before"))
    assert snmp["Tcp"]["OutSegs"] == 4279 and snmp["Tcp"]["MaxConn"] == -1
    assert snmp["Udp"]["InDatagrams"] == 50
    ext = parse_snmp(text("net_netstat.before"))
    assert ext["TcpExt"]["ListenDrops"] == 0 and ext["TcpExt"]["TCPTimeouts"] == 2
    assert snake("RetransSegs") == "retrans_segs"
    assert snake("TCPLostRetransmit") == "lost_retransmit"
    assert snake("ListenOverflows") == "listen_overflows"


def test_tcp_collector_recorded_deltas() -> None:
    state, read = phase_reader({"/proc/net/snmp": "net_snmp", "/proc/net/netstat": "net_netstat"})
    col = TcpCollector(read)
    before = col.snapshot()
    state["phase"] = "after"
    out = col.delta(before, col.snapshot(), LABELS)
    assert by(out, "tcp_out_segs", netns="root").value == 11
    assert by(out, "tcp_in_segs").value == 13
    assert by(out, "tcp_active_opens").value == 1
    assert by(out, "tcp_retrans_segs").value == 0
    assert by(out, "tcp_listen_drops").value == 0
    assert by(out, "tcp_lost_retransmit").value == 0
    assert by(out, "tcp_retrans_ratio").value == 0.0


def test_tcp_collector_retransmits_in_a_namespace() -> None:
    def snmp(out_segs: int, retrans: int) -> str:
        return ("Tcp: ActiveOpens OutSegs RetransSegs\n"
                f"Tcp: 1 {out_segs} {retrans}\n")

    def netstat(drops: int) -> str:
        return ("TcpExt: ListenDrops ListenOverflows TCPLostRetransmit\n"
                f"TcpExt: {drops} {drops} 3\n")

    files: dict[tuple[str | None, str], str] = {
        ("n1", "/proc/net/snmp"): snmp(1000, 10), ("n1", "/proc/net/netstat"): netstat(0)}
    col = TcpCollector(recorded_reader(files), namespaces=["n1"])
    before = col.snapshot()
    files.update({("n1", "/proc/net/snmp"): snmp(3000, 50),
                  ("n1", "/proc/net/netstat"): netstat(4)})
    out = col.delta(before, col.snapshot())
    assert by(out, "tcp_retrans_segs", netns="n1").value == 40
    assert by(out, "tcp_retrans_ratio", netns="n1").value == pytest.approx(0.02)
    assert by(out, "tcp_listen_drops").value == 4 and by(out, "tcp_listen_overflows").value == 4
    assert by(out, "tcp_lost_retransmit").value == 0


def test_cgroup_v1_and_v2() -> None:
    v1 = "/sys/fs/cgroup/cpuacct/lab/cpuacct.usage"
    v2 = "/sys/fs/cgroup/lab/cpu.stat"
    files: dict[tuple[str | None, str], str] = {(None, v1): text("cgroup_v1_cpuacct.usage.before"),
             (None, v2): text("cgroup_v2_cpu.stat.before")}
    col = CgroupCpuCollector({"v1": v1, "v2": v2}, recorded_reader(files))
    before = col.snapshot()
    files.update({(None, v1): text("cgroup_v1_cpuacct.usage.after"),
                  (None, v2): text("cgroup_v2_cpu.stat.after")})
    out = col.delta(before, col.snapshot(), LABELS)
    assert by(out, "cgroup_cpu_s", cgroup="v1").value == pytest.approx(
        (177312079840 - 176680966885) / 1e9)
    assert by(out, "cgroup_cpu_s", cgroup="v2").value == pytest.approx(
        (172518926 - 171894939) / 1e6)
    assert by(out, "cgroup_cpu_user_s", cgroup="v2").value == pytest.approx(0.571986)
    assert by(out, "cgroup_cpu_sys_s", cgroup="v2").value == pytest.approx(0.052)
    assert not any(s.metric == "cgroup_cpu_user_s" and s.labels["cgroup"] == "v1" for s in out)
    with pytest.raises(UnsupportedError):
        parse_cgroup_cpu("/sys/fs/cgroup/x/memory.stat", "anon 1")


def test_read_root_reads_real_proc_and_refuses_namespaces() -> None:
    col = CpuCollector()
    before = col.snapshot()
    after = col.snapshot()
    out = col.delta(before, after)
    assert by(out, "cpu_busy_s", cpu="all").value >= 0.0
    with pytest.raises(UnsupportedError, match="netns"):
        read_root("lab-n0", "/proc/net/dev")


SOFTNET_BEFORE = ("0589b9bd 00000000 00000006 00000000 00000000 00000000 00000000 00000000 "
                  "00000000 00000000 00000000 00000000 00000000 00000000 00000000\n"
                  "077de91b 00000000 0000000f 00000000 00000000 00000000 00000000 00000000 "
                  "00000000 00000000 00000000 00000002 00000001 00000002 00000000\n")
"""/proc/net/softnet_stat of this 2-core machine (kernel 6.18): processed, dropped,
time_squeeze, ...; the 13th column is the core's number (0 on core 0's row)."""


def test_softnet_drops_and_squeezes_per_core() -> None:
    after = SOFTNET_BEFORE.replace("00000000 0000000f", "00000003 00000014", 1)
    files: dict[tuple[str | None, str], str] = {
        (None, "/proc/stat"): text("stat.before"), (None, "/proc/softirqs"):
        text("softirqs.before"), (None, "/proc/net/softnet_stat"): SOFTNET_BEFORE}
    col = CpuCollector(recorded_reader(files), clk_tck=100, softnet=True)
    before = col.snapshot()
    files.update({(None, "/proc/stat"): text("stat.after"),
                  (None, "/proc/softirqs"): text("softirqs.after"),
                  (None, "/proc/net/softnet_stat"): after})
    out = col.delta(before, col.snapshot(), LABELS)
    assert by(out, "softnet_dropped", cpu="1").value == 3
    assert by(out, "softnet_time_squeeze", cpu="1").value == 5
    assert by(out, "softnet_time_squeeze", cpu="0").value == 0
    assert by(out, "softnet_time_squeeze", cpu="all").value == 5
    # without softnet (and without the file) the collector reads what it read before
    plain = CpuCollector(recorded_reader({k: v for k, v in files.items()
                                          if k[1] != "/proc/net/softnet_stat"}), clk_tck=100)
    assert not [s for s in plain.delta(plain.snapshot(), plain.snapshot())
                if s.metric.startswith("softnet")]


def test_udp_collector_counts_socket_buffer_drops_per_namespace() -> None:
    def snmp(received: int, rcvbuf: int) -> str:
        return ("Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n"
                f"Udp: {received} 0 {rcvbuf} 7 {rcvbuf} 0\n")

    files: dict[tuple[str | None, str], str] = {("h0", "/proc/net/snmp"): snmp(100, 0)}
    col = UdpCollector(recorded_reader(files), namespaces=["h0"])
    before = col.snapshot()
    files[("h0", "/proc/net/snmp")] = snmp(50_100, 55_026)
    out = col.delta(before, col.snapshot(), LABELS)
    assert by(out, "udp_rcvbuf_errors", netns="h0").value == 55_026
    assert by(out, "udp_in_datagrams", netns="h0").value == 50_000
    assert by(out, "udp_out_datagrams").value == 0


def test_tcp_collector_counts_what_tells_a_spurious_retransmission() -> None:
    assert snake("TCPDSACKRecv") == "dsack_recv"
    assert snake("TCPSpuriousRtxHostQueues") == "spurious_rtx_host_queues"
    ext = parse_snmp(text("net_netstat.before"))["TcpExt"]
    assert {"TCPDSACKRecv", "TCPSACKReorder", "TCPLossProbes"} <= set(ext)


PERF_REPORT = """\
    44.03%  [kernel.kallsyms]        [k] pv_native_safe_halt
     8.13%  python3.11               [.] _PyEval_EvalFrameDefault
     6.71%  [kernel.kallsyms]        [k] _raw_spin_unlock_irqrestore
     2.40%  [kernel.kallsyms]        [k] finish_task_switch.isra.0
     1.00%  [kernel.kallsyms]        [k] poll_idle
"""
"""``perf report --stdio --no-children --sort dso,sym -q`` of ``perf record -e cpu-clock -a``
on this machine (software sampling works; hardware counters do not)."""


def test_perf_report_shares_leave_idle_loops_out() -> None:
    parsed = parse_report(PERF_REPORT)
    assert parsed[("[kernel.kallsyms]", "pv_native_safe_halt")] == pytest.approx(44.03)
    shares = busy_shares(parsed)
    assert ("[kernel.kallsyms]", "poll_idle") not in shares
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares[("python3.11", "_PyEval_EvalFrameDefault")] == pytest.approx(
        8.13 / (8.13 + 6.71 + 2.40))


def test_counter_files_read_in_one_command_come_back_file_by_file(tmp_path: Path) -> None:
    """The one-command reader of real machines and Kubernetes nodes: each file behind its
    marker, a missing one None, through a real shell."""
    import subprocess

    from vnetbench.collectors.batch import cat_script, split_files

    (tmp_path / "a").write_text("Inter-|   Receive\n lo: 1 2\n")
    (tmp_path / "b c").write_text("")
    files = [("", str(tmp_path / "a")), ("", str(tmp_path / "gone")), ("", str(tmp_path / "b c"))]
    out = subprocess.run(["sh", "-c", cat_script(files)], capture_output=True, text=True,
                         check=True).stdout
    assert split_files(out, 3) == ["Inter-|   Receive\n lo: 1 2\n", None, ""]
    assert split_files(out.split("@@file 2")[0], 3)[2] is None  # output cut short
