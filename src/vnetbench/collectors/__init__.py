"""Collectors of kernel counters (CPU, devices, TCP, UDP, cgroups) turned into Samples per trial."""

from vnetbench.collectors.base import Collector, Reader, Snapshot, read_root, recorded_reader
from vnetbench.collectors.cgroup import CgroupCpuCollector
from vnetbench.collectors.cpu import CpuCollector
from vnetbench.collectors.netdev import NetDevCollector
from vnetbench.collectors.tcp import TcpCollector
from vnetbench.collectors.udp import UdpCollector

__all__ = [
    "CgroupCpuCollector",
    "Collector",
    "CpuCollector",
    "NetDevCollector",
    "Reader",
    "Snapshot",
    "TcpCollector",
    "UdpCollector",
    "read_root",
    "recorded_reader",
]
