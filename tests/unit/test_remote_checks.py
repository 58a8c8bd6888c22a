"""The remote machine checks and the SSH transport's pure parts: the probe script's output
(recorded on a real virtio NIC, an emulated machine, a machine without the underlay, a login
that is not root) parsed into facts; every kind of problem as one line saying what to fix;
ssh's own failures classified; the ssh command lines."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path
from typing import Any

import pytest

from vnetbench.backends.machines.checks import (
    ALL_FEATURES,
    MachineFacts,
    check_machines,
    clock_estimate,
    duplicate_problems,
    machine_problems,
    parse_address,
    parse_clock,
    parse_driver,
    parse_features,
    parse_int,
    parse_interfaces,
    parse_offloads,
    parse_probe_output,
    parse_tools,
    probe_script,
    split_sections,
)
from vnetbench.backends.machines.ssh import SSH_CONFIG_ENV, SshConnection, describe_ssh_failure
from vnetbench.errors import LabError, UnsupportedError
from vnetbench.lab.spec import MachineSpec

DATA = Path(__file__).resolve().parents[1] / "data" / "remote"
TOOLS = ["ip", "tc", "ethtool", "iptables-restore", "wg", "sockperf"]


def recorded(name: str, underlay: str = "eth1", target: str = "root@m") -> MachineFacts:
    return parse_probe_output(target, underlay, (DATA / name).read_text(), TOOLS, (0.001, 0.0004))


def facts(**changes: Any) -> MachineFacts:
    base = MachineFacts(
        target="root@192.0.2.10", hostname="lab1", kernel="6.1.0-18-amd64", uid=0,
        clock_offset_s=0.0, clock_rtt_s=0.001, underlay="eth1", address="192.0.2.10", prefix=24,
        mtu=1500, speed_mbps=10000, driver="ixgbe", offloads={"tso": True},
        features=dict.fromkeys(ALL_FEATURES, True), tools={"ip": "/usr/sbin/ip", "tc": "/usr/sbin/tc"},
        routes=("192.0.2.0/24 dev eth1 proto kernel scope link src 192.0.2.10",),
        interfaces=("lo", "eth0", "eth1"))
    return dataclasses.replace(base, **changes)


# ------------------------------------------------------------------ parsing recorded output


def test_a_real_virtio_nic() -> None:
    f = recorded("probe-virtio-eth0.txt", "eth0")
    assert (f.uid, f.hostname, f.kernel) == (0, "vm", "6.18.44-fc-v595")
    assert (f.address, f.prefix, f.mtu, f.speed_mbps, f.driver) == ("192.0.2.2", 24, 1400, None, "virtio_net")
    assert f.interfaces == ("lo", "ifb0", "ifb1", "eth0")
    assert f.offloads["rx"] and f.offloads["tso"] and f.offloads["gso"] and f.offloads["gro"]
    assert not f.offloads["lro"] and f.offloads["gro-hw"] and not f.offloads["udp-gro-forwarding"]
    assert "tx-checksum-ipv4" not in f.offloads  # sub-features are not listed
    assert f.features == {"veth": True, "bridge": True, "macvlan": True, "ipvlan": False, "vxlan": True,
                          "wireguard": False, "tun": True, "netem": False, "tbf": True, "nfqueue": True,
                          "br_netfilter": True}
    assert f.tools == {"ip": "/usr/sbin/ip", "tc": "/usr/sbin/tc", "ethtool": "/usr/sbin/ethtool",
                       "iptables-restore": "/usr/sbin/iptables-restore", "wg": "/usr/bin/wg",
                       "sockperf": "/usr/bin/sockperf"}
    assert f.routes[0] == "default via 192.0.2.1 dev eth0" and len(f.routes) == 7
    assert (f.clock_offset_s, f.clock_rtt_s) == (0.001, 0.0004)
    assert machine_problems(f, need_features=["vxlan", "tun"], need_tools=["ip", "tc"]) == []
    as_json = f.to_json()
    assert as_json["routes"] == list(f.routes) and as_json["features"]["vxlan"] is True


def test_an_emulated_machine() -> None:
    f = recorded("probe-emulated-eth1.txt")
    assert (f.address, f.prefix, f.mtu, f.speed_mbps, f.driver) == ("198.51.100.10", 24, 1500, 10000, "veth")
    assert f.interfaces == ("lo", "eth1")  # eth1@if3
    assert f.offloads["gro"] is False and f.features["vxlan"] and not f.features["ipvlan"]


def test_a_machine_without_the_underlay() -> None:
    f = recorded("probe-no-underlay.txt", "eth7")
    assert (f.address, f.mtu, f.speed_mbps, f.driver, f.offloads) == (None, None, None, None, {})
    assert f.features == {"veth": True, "vxlan": True}
    assert machine_problems(f, need_features=["vxlan"], need_tools=["ip"]) == [
        "host root@m: no interface eth7 (it has: eth1): set `underlay` to the interface that carries lab traffic"]


def test_a_login_that_is_not_root() -> None:
    f = recorded("probe-not-root.txt", target="vnbtuser@m")
    assert f.uid == 1001 and f.features == {} and f.tools["ip"] == "/usr/bin/ip"
    problems = machine_problems(f, need_features=["vxlan"], need_tools=["ip"])
    assert problems == ["host vnbtuser@m: logged in as uid 1001, not root: log in as root (e.g. `ssh: "
                        "root@...`); vnetbench creates namespaces and interfaces there"]


def test_output_cut_short_is_an_error() -> None:
    text = (DATA / "probe-emulated-eth1.txt").read_text()
    with pytest.raises(LabError, match=r"^host root@m: the machine probe did not run to its end"):
        parse_probe_output("root@m", "eth1", text.split("@@vnb routes")[0], TOOLS, (0.0, 0.0))
    with pytest.raises(LabError, match="printed: nothing"):
        parse_probe_output("root@m", "eth1", "", TOOLS, (0.0, 0.0))


def test_small_parsers() -> None:
    assert split_sections("junk\n@@vnb a\n1\n2\n@@vnb b\n@@vnb c\nx\n") == {"a": "1\n2", "b": "", "c": "x"}
    assert parse_interfaces("1: lo: <LOOPBACK>\n7: vnb1a2bv0@vnb1a2bv1: <BROADCAST>\nnoise") == ("lo", "vnb1a2bv0")
    assert parse_address("3: eth1    inet 10.1.2.3/16 brd 10.1.255.255 scope global eth1\n"
                         "3: eth1    inet 10.9.9.9/32 scope global secondary eth1") == ("10.1.2.3", 16)
    assert parse_address("") == (None, None)
    assert [parse_int(t) for t in ("1500\n", "-1", "", "unknown")] == [1500, None, None, None]
    assert parse_driver("../../../../bus/pci/drivers/ixgbe\n") == "ixgbe"
    assert parse_driver("veth") == "veth" and parse_driver("") is None
    assert parse_offloads("Features for x:\ngeneric-receive-offload: off [requested on]\n"
                          "\ttx-checksum-ipv4: on\nhighdma: on [fixed]\nweird line\n") == {
        "gro": False, "highdma": True}
    assert parse_tools("ip /usr/sbin/ip\nwg \nother /x\n", ["ip", "wg", "tc"]) == {
        "ip": "/usr/sbin/ip", "wg": None, "tc": None}
    assert parse_features("veth 1\nipvlan 0\nerror ip netns add: File exists\nbogus 1\n") == {
        "veth": True, "ipvlan": False}


def test_the_clock() -> None:
    assert parse_clock("1700000000.123456789\n") == pytest.approx(1700000000.123456789)
    assert parse_clock("1700000000.N") == 1700000000.0  # a date without %N
    assert parse_clock("1700000000.%N") == 1700000000.0
    with pytest.raises(LabError):
        parse_clock("Thu Nov 23")
    # sent, remote, received: the quickest round trip (the second) wins; midpoint 10.002
    offset, rtt = clock_estimate([(10.0, 15.0, 10.2), (10.0, 12.5, 10.004), (10.0, 99.0, 10.5)])
    assert offset == pytest.approx(2.498) and rtt == pytest.approx(0.004)
    with pytest.raises(ValueError):
        clock_estimate([])


def test_the_probe_script() -> None:
    script = probe_script("eth1; reboot", ["ip", "a b"], ["macvlan", "vxlan"], "vnb0f0f")
    assert "U='eth1; reboot'" in script and "'a b'" in script  # quoted, never run
    assert "NS=vnb0f0f-probe" in script and "trap 'ip netns del \"$NS\" 2>/dev/null' EXIT" in script
    tried = [line.split()[1] for line in script.splitlines() if line.strip().startswith("try ")]
    assert tried == ["veth", "macvlan", "vxlan"]  # macvlan and vxlan need the veth
    assert "vnb0f0fv0" in script and "ipvlan" not in script
    assert subprocess.run(["sh", "-n"], input=script, text=True, capture_output=True).returncode == 0
    bare = probe_script("eth1", [], [], "vnb0f0f")
    assert "netns add" not in bare and "@@vnb end" not in bare and "sec end" in bare
    with pytest.raises(ValueError, match="unknown kernel features"):
        probe_script("eth1", [], ["vxlan", "warp"], "vnb0f0f")
    with pytest.raises(ValueError):
        probe_script("eth1", [], [], "vnbt0f0f")


# ------------------------------------------------------------------ problems


def test_every_kind_of_machine_problem() -> None:
    assert machine_problems(facts(), need_features=["vxlan"], need_tools=["ip"]) == []
    assert machine_problems(facts(uid=1000), need_features=[], need_tools=[]) == [
        "host root@192.0.2.10: logged in as uid 1000, not root: log in as root (e.g. `ssh: root@...`); "
        "vnetbench creates namespaces and interfaces there"]
    assert machine_problems(facts(underlay="eth9", address=None, mtu=None), need_features=[],
                            need_tools=[]) == [
        "host root@192.0.2.10: no interface eth9 (it has: eth0, eth1): set `underlay` to the "
        "interface that carries lab traffic"]
    assert machine_problems(facts(address=None, prefix=None), need_features=[], need_tools=[]) == [
        "host root@192.0.2.10: eth1 has no IPv4 address: give it one (ip addr add ADDRESS/PREFIX dev "
        "eth1) or set `underlay` to an interface that has one"]
    assert machine_problems(facts(tools={"ip": None, "tc": "/sbin/tc", "wizard": None}), need_features=[],
                            need_tools=["ip", "tc", "wizard", "iperf3"]) == [
        "host root@192.0.2.10: ip not found: apt-get install iproute2",
        "host root@192.0.2.10: wizard not found: install it or put it on root's PATH",
        "host root@192.0.2.10: iperf3 not found: apt-get install iperf3"]
    lacking = facts(features=dict(dict.fromkeys(ALL_FEATURES, True), ipvlan=False, netem=False))
    assert machine_problems(lacking, need_features=["vxlan", "ipvlan", "netem"], need_tools=[]) == [
        "host root@192.0.2.10: kernel 6.1.0-18-amd64 lacks ipvlan (ipvlan unavailable): load the module "
        "(modprobe ipvlan) or use a kernel that has it",
        "host root@192.0.2.10: kernel 6.1.0-18-amd64 lacks netem (delay/jitter/loss use the userspace link "
        "emulator (vnetbench-linkem) instead): load the module (modprobe sch_netem) or use a kernel that has it"]
    assert machine_problems(facts(features={}), need_features=["vxlan"], need_tools=[]) == [
        "host root@192.0.2.10: could not probe kernel features (`ip netns add` failed or `ip` is missing): "
        "check that iproute2 is installed and /run/netns is writable"]
    # not root: the features could not be probed, the root line says it all
    assert len(machine_problems(facts(uid=5, features={}), need_features=["vxlan"], need_tools=[])) == 1
    # without the interface list (older facts), a missing MTU means a missing interface
    assert "no interface eth1:" in machine_problems(facts(interfaces=(), mtu=None), need_features=[],
                                                    need_tools=[])[0]
    every = machine_problems(facts(uid=1, underlay="eth9", tools={}), need_features=["vxlan"],
                             need_tools=["ip"])
    assert len(every) == 3 and all(line.startswith("host root@192.0.2.10: ") for line in every)


def test_duplicates() -> None:
    a = MachineSpec(ssh="root@192.0.2.10", underlay="eth1")
    b = MachineSpec(ssh="root@192.0.2.11", underlay="eth1")
    shouted = MachineSpec(ssh="ROOT@192.0.2.10", underlay="eth2")
    other_port = MachineSpec(ssh="root@192.0.2.10", underlay="eth1", port=2222)
    assert duplicate_problems([a, b]) == []
    assert duplicate_problems([a, b, shouted]) == [
        "host ROOT@192.0.2.10: listed twice in `hosts` (entries 1 and 3): list each machine once"]
    assert duplicate_problems([a, other_port]) == []
    alias = MachineSpec(ssh="lab1", underlay="eth1")
    same = [facts(), facts(address="192.0.2.11"), facts(target="lab1")]
    assert duplicate_problems([a, b, alias], same) == [
        "host lab1: is the same machine as root@192.0.2.10 (hostname lab1, eth1 192.0.2.10): "
        "list each machine once"]
    # same hostname (e.g. cloned images) on other addresses: different machines
    assert duplicate_problems([a, b], [facts(), facts(address="192.0.2.11")]) == []
    assert duplicate_problems([a, b], [facts(address=None), facts(address=None)]) == []
    with pytest.raises(ValueError):
        duplicate_problems([a, b], [facts()])


def test_duplicates_are_refused_before_connecting(tmp_path: Path) -> None:
    never = MachineSpec(ssh="root@vnbt-never.invalid", underlay="eth1")
    with pytest.raises(UnsupportedError) as caught:
        check_machines([never, never], tmp_path, need_features=[], need_tools=[])
    assert str(caught.value) == ("host root@vnbt-never.invalid: listed twice in `hosts` (entries 1 and 2): "
                                 "list each machine once")
    assert check_machines([], tmp_path, need_features=[], need_tools=[]) == ([], [])


# ------------------------------------------------------------------ ssh


@pytest.mark.parametrize(("stderr", "line"), [
    ("ssh: connect to host 203.0.113.11 port 22: Connection refused\n",
     "host T: cannot connect (Connection refused): check the address and that sshd runs"),
    ("ssh: connect to host 203.0.113.99 port 22: Connection timed out\n",
     "host T: cannot connect (Connection timed out): check the address and that sshd runs"),
    ("ssh: connect to host 10.0.0.1 port 22: No route to host\r\n",
     "host T: cannot connect (No route to host): check the address and that sshd runs"),
    ("kex_exchange_identification: read: Connection reset by peer\r\nConnection reset by 10.0.0.1 port 22\r\n",
     "host T: cannot connect (kex_exchange_identification: read: Connection reset by peer): check the "
     "address and that sshd runs"),
    ("ssh: Could not resolve hostname nosuch.invalid: Name or service not known\n",
     "host T: unknown host name (Name or service not known): check the name, or add a Host entry for it "
     "to your ssh config"),
    ("root@203.0.113.10: Permission denied (publickey).\n",
     "host T: the key was refused (Permission denied (publickey)): give the right `identity` or load it "
     "in your agent"),
    ("Received disconnect from 10.0.0.1 port 22:2: Too many authentication failures\n",
     "host T: the key was refused (Too many authentication failures): give the right `identity` or load "
     "it in your agent"),
    ("No ED25519 host key is known for 203.0.113.10 and you have requested strict checking.\n"
     "Host key verification failed.\n",
     "host T: host key verification failed (No ED25519 host key is known for 203.0.113.10): the machine's "
     "host key is not in your known_hosts or has changed; check it and add it (connect once with `ssh`, "
     "or ssh-keyscan)"),
    ("/tmp/cfg: line 3: Bad configuration option: identityfle\n/tmp/cfg: terminating, 1 bad configuration "
     "options\n",
     "host T: ssh refused its configuration (/tmp/cfg: line 3: Bad configuration option: identityfle): "
     "fix your ssh config"),
    ("something new\nand odd\n", "host T: ssh failed (and odd)"),
    ("", "host T: ssh failed (no message)"),
])
def test_ssh_failures_say_what_to_fix(stderr: str, line: str) -> None:
    assert describe_ssh_failure("T", stderr) == line


def test_ssh_command_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SSH_CONFIG_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    plain = SshConnection(MachineSpec(ssh="lab1", underlay="eth1"), tmp_path / "ctl", connect_timeout=2.5)
    argv = plain.argv(["echo", "a b", "$x"])
    assert argv[0] == "ssh" and "-F" not in argv and "-i" not in argv and "-p" not in argv
    assert argv[-3:] == ["--", "lab1", "echo 'a b' '$x'"]
    assert "BatchMode=yes" in argv and "ConnectTimeout=3" in argv and "ControlMaster=no" in argv
    assert f"ControlPath={plain.control_path}" in argv and plain.control_path.parent == tmp_path / "ctl"
    master = plain.master_argv()
    assert "ControlMaster=yes" in master and "-N" in master and "-f" in master and master[-2:] == ["--", "lab1"]
    assert any(o.startswith("ControlPersist=") for o in master)
    with pytest.raises(ValueError):
        plain.argv([])

    monkeypatch.setenv(SSH_CONFIG_ENV, "/etc/vnb-ssh-config")
    keyed = SshConnection(MachineSpec(ssh="root@h", underlay="eth1", identity="~/.ssh/lab", port=2222),
                          tmp_path / "ctl")
    argv = keyed.argv(["true"])
    assert argv[1:3] == ["-F", "/etc/vnb-ssh-config"]
    i = argv.index("-i")
    assert argv[i + 1:i + 4] == [str(tmp_path / ".ssh" / "lab"), "-o", "IdentitiesOnly=yes"]
    assert argv[argv.index("-p") + 1] == "2222"
    assert keyed.target == "root@h" and keyed.control_path != plain.control_path


def test_a_long_control_dir_falls_back_to_a_short_one(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 100)
    conn = SshConnection(MachineSpec(ssh="h", underlay="eth1"), deep)
    assert len(str(conn.control_path)) <= 90 and conn.control_path.parent.is_dir()
    private = conn.control_path.parent
    conn.close()  # never opened: nothing to stop, never raises; the private dir goes
    assert not private.exists()


def test_open_refuses_a_missing_identity_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SSH_CONFIG_ENV, raising=False)
    conn = SshConnection(MachineSpec(ssh="root@h", underlay="eth1", identity=str(tmp_path / "nokey")), tmp_path)
    with pytest.raises(UnsupportedError, match=r"^host root@h: identity .*/nokey does not exist: give the path"):
        conn.open()
    monkeypatch.setenv(SSH_CONFIG_ENV, str(tmp_path / "nothing"))
    with pytest.raises(UnsupportedError, match=r"VNETBENCH_SSH_CONFIG=.* does not exist"):
        SshConnection(MachineSpec(ssh="root@h", underlay="eth1"), tmp_path).open()
