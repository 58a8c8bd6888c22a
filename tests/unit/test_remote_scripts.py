"""The build and teardown scripts of a lab on real machines (``remote.scripts``), the
``hosts: [...]`` form of scenarios, and what a plan on machines refuses."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from vnetbench.backends.catalog import get_layer
from vnetbench.backends.lab_plan import make_plan
from vnetbench.backends.machines.backend import MachinesBackend, MachinesPlan, route_destination
from vnetbench.backends.machines.scripts import (
    machine_scripts,
    record_pid,
    remote_dir,
    teardown_script,
)
from vnetbench.errors import ScenarioError, UnsupportedError
from vnetbench.lab.topology import Addresses, LinkShape, Names, Topology
from vnetbench.layers.base import PlanContext
from vnetbench.scenario.sweep import expand

MACHINES = [{"ssh": "root@192.0.2.10", "underlay": "eth1"},
            {"ssh": "root@192.0.2.11", "underlay": "eth1", "identity": "~/.ssh/lab"}]


def topo(nodes: int = 4) -> Topology:
    return Topology(hosts=2, nodes=nodes, names=Names("ab12", machine_underlays=("eth1", "eth2")),
                    addresses=Addresses("10.200", machine_addresses=("192.0.2.10", "192.0.2.11")))


def plan(layer: str, t: Topology | None = None) -> MachinesPlan:
    t = t or topo()
    obj = get_layer(layer)
    ctx = PlanContext(run_dir=Path(remote_dir(t.names.prefix)), tools={"wg": "/usr/bin/wg"},
                      features={"wireguard": True})
    lab = make_plan(t, obj, obj.options(), ctx, backend=MachinesBackend)
    assert isinstance(lab.backend, MachinesPlan)
    assert lab.kernel.stages == ()  # nothing is applied on this host
    return lab.backend


def test_hosts_list_names_machines_and_is_no_sweep() -> None:
    f = expand({"hosts": MACHINES, "nodes": 4, "layers": ["host", "vxlan"]})
    (point,) = f.points
    assert point.scenario.hosts == 2
    assert [m.ssh for m in point.scenario.machines] == ["root@192.0.2.10", "root@192.0.2.11"]
    assert point.scenario.machines[1].identity == "~/.ssh/lab"
    swept = expand({"hosts": [1, 2], "nodes": 2})
    assert [p.scenario.hosts for p in swept.points] == [1, 2]


@pytest.mark.parametrize(("extra", "said"), [
    ({"hosts": [MACHINES[0], MACHINES[0]]}, "given twice"),
    ({"hosts": [{"ssh": "root@x"}]}, "underlay"),
    ({"hosts": [{"ssh": "root@x", "underlay": "eth1", "bogus": 1}]}, "bogus"),
    ({"link": {"delay": "10ms"}}, "no link shaping"),
    ({"resources": {"cpus": 0.5}}, "not applied on real machines"),
])
def test_bad_machine_scenarios_say_what_to_fix(extra: dict[str, object], said: str) -> None:
    raw: dict[str, object] = {"hosts": MACHINES, "nodes": 2, **extra}
    with pytest.raises(ScenarioError, match=said):
        expand(raw)


def test_host_layer_runs_on_the_machines_own_namespace() -> None:
    scripts = plan("host").scripts
    assert len(scripts) == 2
    assert scripts[0].namespaces == ()  # nodes share the machine's namespace
    assert "netns add" not in scripts[0].build
    assert "eth1" not in scripts[0].build  # the underlay is left as it is


def test_each_machine_gets_its_own_part_in_plan_order() -> None:
    scripts = plan("vxlan").scripts
    h0, h1 = scripts[0].build, scripts[1].build
    assert scripts[0].namespaces == ("vnbab12-n0", "vnbab12-n2")
    assert scripts[1].namespaces == ("vnbab12-n1", "vnbab12-n3")
    assert "vxlan id 4242 local 192.0.2.10 dev eth1" in h0
    assert "vxlan id 4242 local 192.0.2.11 dev eth2" in h1
    assert "dst 192.0.2.11" in h0 and "dst 192.0.2.10" in h1
    assert h0.index("netns add vnbab12-n0") < h0.index("link add vnbab12x0") < \
        h0.index("fdb append")
    assert "vnbab12-n1" not in h0


def test_machine_sysctls_are_recorded_before_written_and_restored() -> None:
    s = plan("bridge").scripts[0]
    record = f"{remote_dir('vnbab12')}/sysctls-h0"
    assert s.build.index(f"net.ipv4.ip_forward=\"$(sysctl -n net.ipv4.ip_forward)\" >> {record}") \
        < s.build.index("sysctl -q -w net.ipv4.ip_forward=1")
    assert f"done < {record}" in s.teardown
    # routes through the machine's own interface are removed by the teardown
    assert "route del 10.200.65.0/24 via 192.0.2.11" in s.teardown


def test_userspace_wireguard_daemon_is_started_recorded_and_awaited() -> None:
    t = topo()
    obj = get_layer("wireguard")
    ctx = PlanContext(run_dir=Path(remote_dir(t.names.prefix)),
                      tools={"wg": "/usr/bin/wg", "wireguard-go": "/r/bin/wireguard-go"},
                      features={"wireguard": False})
    lab = make_plan(t, obj, obj.options(), ctx, backend=MachinesBackend)
    assert isinstance(lab.backend, MachinesPlan)
    h0, h1 = (s.build for s in lab.backend.scripts)
    assert "setsid env WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD=1 /r/bin/wireguard-go" in h0
    assert record_pid("$!", f"{remote_dir('vnbab12')}/pids-h0") in h0
    assert "until [ -e /var/run/wireguard/vnbab12w0.sock ]" in h0
    # each machine gets its own private key only
    assert "wg0.key <<" in h0 and "wg1.key <<" not in h0
    assert "wg1.key <<" in h1 and "wg0.key <<" not in h1


@pytest.mark.parametrize("layer", ["nat"])
def test_firewall_in_a_machines_own_namespace_is_refused(layer: str) -> None:
    with pytest.raises(UnsupportedError, match="does not change"):
        plan(layer)


def test_shaping_needs_a_switch_machines_do_not_have() -> None:
    t = Topology(hosts=2, nodes=2, names=topo().names, addresses=topo().addresses,
                 link=LinkShape(delay=0.01))
    with pytest.raises(UnsupportedError):
        plan("bridge", t)


@pytest.mark.parametrize(("layer", "why"), [("docker-bridge", "docker0"),
                                            ("docker-overlay", "swarm"),
                                            ("docker-nat", "firewall"),
                                            ("docker-proxy", "firewall")])
def test_docker_modes_a_machines_engine_cannot_give_are_refused(layer: str, why: str) -> None:
    with pytest.raises(UnsupportedError, match=why):
        MachinesBackend.check(get_layer(layer))


@pytest.mark.parametrize("layer", ["docker-host", "docker-userbridge", "docker-macvlan"])
def test_docker_modes_on_machines_use_their_engines(layer: str) -> None:
    MachinesBackend.check(get_layer(layer))
    p = plan(layer)
    for i, scripts in enumerate(p.scripts):
        assert "dockerd" not in scripts.build  # no engine of ours on a machine
        teardown = scripts.teardown
        # the run's Docker objects go first, after the check that this is the machine
        assert teardown.index("not the machine of") < teardown.index("docker ps --all")
        assert "label=vnetbench.run=ab12" in teardown
        assert "docker image rm --force vnbab12-node:latest" in teardown
        if layer == "docker-host":
            assert "ip netns del" not in teardown
        else:  # the containers' namespaces, attached by the lab, are named and removed
            mine = [f"vnbab12-n{j}" for j in range(4) if j % 2 == i]
            assert all(ns in teardown for ns in mine), teardown
    commands = [" ".join(step.args) for phase in p.docker for step in phase.steps]
    assert sum(c.startswith("import ") for c in commands) == 2
    assert sum(c.startswith("run ") for c in commands) == 4
    described = "\n".join(p.describe())
    assert "docker run" in described


def test_routed_docker_on_machines_routes_and_admits_only_the_lab() -> None:
    p = plan("docker-userbridge")
    h0 = p.scripts[0]
    assert "route add 10.200.65.0/24 via 192.0.2.11" in h0.build
    assert "sysctl -q -w net.ipv4.ip_forward=1" in h0.build
    assert "route del 10.200.65.0/24 via 192.0.2.11" in h0.teardown
    assert ("iptables -w -D DOCKER-USER -s 10.200.0.0/16 -d 10.200.0.0/16 -m comment --comment "
            "vnbab12 -j ACCEPT") in h0.teardown
    nets = [step for phase in p.docker for step in phase.steps if step.args[:2] == ("network", "create")]
    assert [s.host for s in nets] == [0, 1]
    assert "com.docker.network.bridge.name=vnbab12b1" in nets[1].args
    macvlan = [step for phase in plan("docker-macvlan").docker for step in phase.steps
               if step.args[:2] == ("network", "create")]
    assert "parent=eth2" in macvlan[1].args  # machine 1's own underlay


def test_teardown_is_a_no_op_on_another_machine_and_removes_only_the_runs_objects() -> None:
    text = teardown_script(topo(), 1, ["vnbab12-n1"], ["route add 10.200.64.0/24 via 192.0.2.10"])
    assert "grep -q ' 192.0.2.11/' || { echo 'not the machine of 192.0.2.11" in text
    assert "s/^[0-9]*: \\(vnbab12[^:@]*\\).*/\\1/p" in text  # only links named for the run
    assert "ip netns del $ns" in text and "for ns in vnbab12-n1;" in text
    assert "route del 10.200.64.0/24 via 192.0.2.10" in text


@pytest.mark.parametrize(("line", "dest"), [
    ("default via 192.0.2.1 dev eth1", None),
    ("192.0.2.0/24 dev eth1 proto kernel scope link src 192.0.2.10", "192.0.2.0/24"),
    ("local 192.0.2.10 dev eth1 table local proto kernel scope host", "192.0.2.10/32"),
    ("broadcast 192.0.2.255 dev eth1 table local", "192.0.2.255/32"),
])
def test_route_destinations(line: str, dest: str | None) -> None:
    assert route_destination(line) == dest


def test_every_stage_is_marked_so_a_failure_names_it() -> None:
    build = plan("routed").scripts[0].build
    for title in ("namespaces", "early sysctls", "host links", "node links", "late sysctls"):
        assert f"@@vnetbench-stage {title}" in build


def test_a_plan_of_emulated_hosts_has_no_machine_for_its_switch() -> None:
    routed = get_layer("routed")
    emulated = make_plan(topo(), routed, routed.options(), PlanContext(run_dir=Path("/x")))
    with pytest.raises(UnsupportedError, match="no machine to run on"):
        machine_scripts(topo(), emulated.kernel)


def test_a_teardown_kills_a_recorded_pid_only_while_it_is_the_same_process(
        tmp_path: Path) -> None:
    """The records the build writes (pid, start time, boot id) run through the teardown's
    own lines in a real shell: the recorded process is stopped; a PID whose start time no
    longer matches (reused since), one recorded under another boot, and a bare PID with
    nothing to check it by are left alone."""
    import subprocess

    from vnetbench.backends.machines.scripts import kill_recorded

    pid_file = tmp_path / "pids-h0"
    ours, reused, reboot, bare = (subprocess.Popen(["sleep", "60"]) for _ in range(4))
    try:
        subprocess.run(["sh", "-c", record_pid(str(ours.pid), str(pid_file))], check=True)
        subprocess.run(["sh", "-c", record_pid(str(reused.pid), str(pid_file))], check=True)
        subprocess.run(["sh", "-c", record_pid(str(reboot.pid), str(pid_file))], check=True)
        lines = pid_file.read_text().splitlines()
        assert len(lines) == 3 and all(len(line.split()) == 3 for line in lines), lines
        pid, start, boot = lines[1].split()
        lines[1] = f"{pid} {int(start) - 1} {boot}"  # the PID now belongs to a later process
        pid, start, _ = lines[2].split()
        lines[2] = f"{pid} {start} 00000000-0000-0000-0000-000000000000"
        lines.append(str(bare.pid))
        pid_file.write_text("\n".join(lines) + "\n")
        subprocess.run(["sh", "-c", "\n".join(kill_recorded(str(pid_file), ""))], check=True,
                       timeout=30)
        assert ours.wait(timeout=5) is not None
        assert all(p.poll() is None for p in (reused, reboot, bare))
    finally:
        for p in (ours, reused, reboot, bare):
            p.kill()
            p.wait()


def test_two_runs_ending_in_either_order_leave_the_machines_own_sysctl(tmp_path: Path) -> None:
    """Run A sets ip_forward=1 on a machine where it was 0, run B starts while A holds it;
    whichever ends first leaves it to the other, the last puts back 0. The lines the build
    and teardown scripts use, in a real shell, with a stand-in ``sysctl`` on PATH."""
    import os
    import subprocess

    from vnetbench.backends.machines.scripts import record_sysctl, restore_sysctls

    bin_dir, values = tmp_path / "bin", tmp_path / "values"
    bin_dir.mkdir()
    values.mkdir()
    fake = bin_dir / "sysctl"
    fake.write_text(f"""#!/bin/sh
# the two forms the scripts use: sysctl -n KEY; sysctl -q -w KEY=VALUE
if [ "$1" = "-n" ]; then cat "{values}/$2"; exit 0; fi
kv=$3; echo "${{kv#*=}}" > "{values}/${{kv%%=*}}"
""")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    key = "net.ipv4.ip_forward"
    root = tmp_path / "remote"

    def sh(line: str) -> str:
        return subprocess.run(["sh", "-c", line], check=True, env=env, capture_output=True,
                              text=True).stdout

    def value() -> str:
        return (values / key).read_text().strip()

    for first, second in (("vnbaaaa", "vnbbbbb"), ("vnbbbbb", "vnbaaaa")):
        (values / key).write_text("0\n")
        records = {}
        for run in ("vnbaaaa", "vnbbbbb"):  # A starts, then B while A runs
            (root / run).mkdir(parents=True, exist_ok=True)
            records[run] = str(root / run / "sysctls-h0")
            sh(record_sysctl(key, records[run], str(root)))
            sh(f"sysctl -q -w {key}=1")
        assert (root / "vnbbbbb" / "sysctls-h0").read_text() == f"{key}=0\n"
        said = sh(restore_sysctls(records[first], str(root)))
        (root / first / "sysctls-h0").unlink()
        assert value() == "1" and "another run" in said  # the other still needs it
        sh(restore_sysctls(records[second], str(root)))
        (root / second / "sysctls-h0").unlink()
        assert value() == "0", (first, second)


def test_clean_host_leaves_a_run_another_controller_started(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Two controllers share a machine: ``clean --host`` from one runs the teardown of its
    own killed run and leaves the other's (that controller may still be running it), unless
    told ``--any-controller``."""
    import subprocess

    from vnetbench.backends.machines import cleanup
    from vnetbench.host.identity import controller_mark
    from vnetbench.lab.spec import MachineSpec

    ours, theirs = remote_dir("vnbaaaa"), remote_dir("vnbbbbb")
    owners = {ours: controller_mark(), theirs: "otherbox 0123456789abcdef"}

    class Machine:
        ran: ClassVar[list[str]] = []

        def __init__(self, *_args: object) -> None:
            pass

        def open(self) -> None:
            pass

        def close(self) -> None:
            pass

        def run(self, argv: list[str], **_kw: object) -> subprocess.CompletedProcess[str]:
            line = argv[-1]
            if line.startswith("ls "):
                out = f"{ours}/teardown-h0.sh\n{theirs}/teardown-h0.sh\n"
            elif line.startswith("cat "):
                out = owners[line.split()[1].rsplit("/", 1)[0]] + "\n"
            elif "stat -c" in line:  # the work root's check
                out = ""
            else:
                Machine.ran.append(line)
                out = ""
            return subprocess.CompletedProcess(argv, 0, out, "")

    monkeypatch.setattr(cleanup, "SshConnection", Machine)
    monkeypatch.setattr(cleanup, "live_runs", set)
    spec = MachineSpec(ssh="root@192.0.2.10", underlay="-")
    done = cleanup.clean_machine(spec, tmp_path)
    assert Machine.ran == [f"{ours}/teardown-h0.sh"]
    assert any("left run vnbbbbb:" in line and "otherbox" in line for line in done), done
    Machine.ran.clear()
    cleanup.clean_machine(spec, tmp_path, any_controller=True)
    assert Machine.ran == [f"{ours}/teardown-h0.sh", f"{theirs}/teardown-h0.sh"]


@pytest.mark.parametrize("case", ["absent", "ours", "others-write", "link", "file", "theirs"])
def test_a_planted_work_root_on_a_machine_is_refused_before_anything_is_written(
        tmp_path: Path, case: str) -> None:
    """The lines every write under the machines' work root runs first, in a real shell: an
    absent root is made 0700; a link, a file, a root others may write in or (as root) one
    another user owns is refused in one line that says what to do, nothing written."""
    import os
    import subprocess

    from vnetbench.backends.machines.ssh import trusted_root

    root = tmp_path / "vnetbench-remote"
    if case == "ours":
        root.mkdir(mode=0o700)
    elif case == "others-write":
        root.mkdir()
        root.chmod(0o777)
    elif case == "link":
        (tmp_path / "elsewhere").mkdir()
        root.symlink_to(tmp_path / "elsewhere")
    elif case == "file":
        root.write_text("x")
    elif case == "theirs":
        if os.geteuid() != 0:
            pytest.skip("making a directory of another user's needs root")
        root.mkdir(mode=0o700)
        os.chown(root, 65534, 65534)
    script = "\n".join(["set -e", "umask 077", *trusted_root(str(root)),
                        f"touch {root}/written"])
    got = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    if case in ("absent", "ours"):
        assert got.returncode == 0, got.stderr
        assert (root / "written").exists() and root.stat().st_mode & 0o777 == 0o700
        return
    assert got.returncode == 3 and len(got.stderr.strip().splitlines()) == 1, got.stderr
    assert str(root) in got.stderr
    assert not (tmp_path / "elsewhere" / "written").exists() and not (
        root.is_dir() and (root / "written").exists())
