"""The SSH transport and machine checks against emulated machines running real OpenSSH
servers (tests/integration/machines.py): commands, copies and probes work; every bad input
gives one line saying what to fix; nothing is left on the machines or on this box."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from vnetbench.backends.machines.checks import check_machines, probe_machine
from vnetbench.backends.machines.ssh import SSH_CONFIG_ENV, SshConnection
from vnetbench.errors import CommandError, UnsupportedError
from vnetbench.host.features import kernel_features
from vnetbench.lab.spec import MachineSpec

from .machines import TEST_USER, emulated_machines, new_key

pytestmark = pytest.mark.root


def ssh_processes(control_dir: Path) -> list[str]:
    """Command lines of the ssh processes using a control socket in ``control_dir``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[0] == b"ssh" and str(control_dir).encode() in b" ".join(argv):
                found.append(b" ".join(argv).decode())
    return found


def fail_lines(specs: list[MachineSpec], control_dir: Path, *, need_features: tuple[str, ...] = ("veth",),
               connect_timeout: float = 10.0) -> list[str]:
    """The lines of the UnsupportedError ``check_machines`` raises (no connection left)."""
    with pytest.raises(UnsupportedError) as caught:
        check_machines(specs, control_dir, need_features=need_features, need_tools=["ip"],
                       connect_timeout=connect_timeout)
    assert not ssh_processes(control_dir), "connections left open after a failed check"
    return str(caught.value).splitlines()


def test_commands_copies_probes_and_check_on_two_machines(tmp_path: Path) -> None:
    control = tmp_path / "ctl"
    with emulated_machines(2) as m:
        before = m.state()
        conns = [SshConnection(spec, control) for spec in m.specs]
        for conn in conns:
            conn.open()
        try:
            one = conns[0]
            assert one.is_open()
            assert f"inet {m.addresses[0]}/24" in one.run(["ip", "-o", "-4", "addr", "show", "dev", "eth1"]).stdout
            assert one.run(["printf", "%s|", "a b", "it's", "$HOME", "*"]).stdout == "a b|it's|$HOME|*|"
            assert one.run(["cat"], input_text="x\ny\n").stdout == "x\ny\n"
            assert one.run(["sh", "-c", "exit 3"], check=False).returncode == 3
            with pytest.raises(CommandError) as failed:
                one.run(["sh", "-c", "echo nope >&2; exit 4"])
            assert failed.value.returncode == 4 and f"host {one.target}" in str(failed.value)
            assert "nope" in str(failed.value)
            assert one.run_script("a=2\necho $((a * 21))\n").stdout == "42\n"
            popen = subprocess.Popen(one.argv(["tr", "a-z", "A-Z"]), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
            assert popen.communicate("piped\n", timeout=30)[0] == "PIPED\n"

            program = tmp_path / "program"
            program.write_bytes(os.urandom(300_000))
            digest = one.put(program, "/tmp/vnbt-put/bin/program")
            assert digest == hashlib.sha256(program.read_bytes()).hexdigest()
            remote = "/tmp/vnbt-put/bin/program"
            stat = ["stat", "-c", "%a %i %Y", remote]
            first = one.run(stat).stdout
            assert first.split()[0] == "755"
            assert one.run(["sha256sum", remote]).stdout.split()[0] == digest
            assert one.put(program, remote) == digest  # same hash: not copied again
            assert one.run(stat).stdout == first
            # the other machine has its own /tmp
            assert conns[1].run(["test", "-e", remote], check=False).returncode == 1
            one.put_text("/tmp/vnbt-put/secret.conf", "key = 1\n")
            assert one.read_text("/tmp/vnbt-put/secret.conf") == "key = 1\n"
            assert one.run(["stat", "-c", "%a", "/tmp/vnbt-put/secret.conf"]).stdout.strip() == "600"
            one.run(["rm", "-rf", "/tmp/vnbt-put"])

            facts = probe_machine(one, "eth1", ["ip", "tc", "vnbt-no-such-tool"], ["veth", "vxlan", "ipvlan"])
            assert (facts.uid, facts.address, facts.prefix, facts.mtu) == (0, m.addresses[0], 24, 1500)
            assert facts.interfaces == ("lo", "eth1") and facts.driver == "veth"
            assert facts.features["vxlan"] is True
            assert facts.features["ipvlan"] is kernel_features()["ipvlan"]  # False here
            assert facts.tools["ip"] and facts.tools["vnbt-no-such-tool"] is None
            assert abs(facts.clock_offset_s) < 0.05 and 0 < facts.clock_rtt_s < 1
            assert any(r.startswith(f"{m.net}.0/24 dev eth1") for r in facts.routes)
            assert "tso" in facts.offloads and facts.to_json()["routes"] == list(facts.routes)
        finally:
            for conn in conns:
                conn.close()
        assert not ssh_processes(control)
        assert not conns[0].is_open()

        checked, facts_all = check_machines(m.specs, control, need_features=["veth", "vxlan"],
                                            need_tools=["ip", "tc"])
        try:
            assert [c.target for c in checked] == [s.ssh for s in m.specs]
            assert [f.address for f in facts_all] == m.addresses
            assert all(c.is_open() for c in checked)
        finally:
            for conn in checked:
                conn.close()
        assert not ssh_processes(control)
        assert m.state() == before


def test_unreachable_machines_one_line_each(tmp_path: Path) -> None:
    with emulated_machines(2) as m:
        before = m.state()
        m.stop_machine(1)
        nobody = MachineSpec(ssh=f"root@{m.unused_address()}", underlay="eth1")
        lines = fail_lines([*m.specs, nobody], tmp_path / "ctl", connect_timeout=1)
        assert len(lines) == 2, lines
        assert lines[0].startswith(f"host {m.specs[1].ssh}: cannot connect (")
        assert "Connection refused" in lines[0] and lines[0].endswith("check the address and that sshd runs")
        assert lines[1].startswith(f"host {nobody.ssh}: cannot connect (")
        m.start_machine(1)
        assert m.state() == before


def test_refused_key_and_unknown_host_key(tmp_path: Path) -> None:
    with emulated_machines(1) as m:
        before = m.state()
        stranger = new_key(tmp_path, "stranger")
        # the fixture's config offers the authorized key to every machine: one without it
        keyless = tmp_path / "ssh_config"
        keyless.write_text("".join(line for line in m.ssh_config.read_text().splitlines(keepends=True)
                                   if "IdentityFile" not in line))
        spec = MachineSpec(ssh=m.specs[0].ssh, underlay="eth1", identity=str(stranger))
        os.environ[SSH_CONFIG_ENV] = str(keyless)
        lines = fail_lines([spec], tmp_path / "ctl")
        assert lines == [f"host {spec.ssh}: the key was refused (Permission denied (publickey)): "
                         f"give the right `identity` or load it in your agent"]

        strange_host = tmp_path / "ssh_config_no_hosts"
        (tmp_path / "empty_known_hosts").write_text("")
        strange_host.write_text(m.ssh_config.read_text().replace(str(m.known_hosts),
                                                                 str(tmp_path / "empty_known_hosts")))
        os.environ[SSH_CONFIG_ENV] = str(strange_host)
        lines = fail_lines(m.specs, tmp_path / "ctl")
        assert len(lines) == 1 and lines[0].startswith(f"host {m.specs[0].ssh}: host key verification failed")
        os.environ[SSH_CONFIG_ENV] = str(m.ssh_config)
        assert m.state() == before


def test_not_root(tmp_path: Path) -> None:
    with emulated_machines(1, user=TEST_USER) as m:
        before = m.state()
        lines = fail_lines(m.specs, tmp_path / "ctl", need_features=("veth", "vxlan"))
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"host {TEST_USER}@{m.addresses[0]}: logged in as uid ")
        assert "not root: log in as root" in lines[0]
        assert m.state() == before
    assert subprocess.run(["id", TEST_USER], capture_output=True).returncode != 0


def test_duplicates_and_missing_underlay(tmp_path: Path) -> None:
    with emulated_machines(2) as m:
        before = m.state()
        a, b = m.specs
        lines = fail_lines([a, b, a], tmp_path / "ctl")  # found before connecting
        assert lines == [f"host {a.ssh}: listed twice in `hosts` (entries 1 and 3): list each machine once"]

        # root@X and X (the same login: we are root) are one machine
        bare = MachineSpec(ssh=m.addresses[0], underlay="eth1")
        lines = fail_lines([a, b, bare], tmp_path / "ctl")
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"host {bare.ssh}: is the same machine as {a.ssh} (hostname ")

        wrong = MachineSpec(ssh=b.ssh, underlay="eth7")
        lines = fail_lines([a, wrong], tmp_path / "ctl")
        assert lines == [f"host {b.ssh}: no interface eth7 (it has: eth1): set `underlay` to the "
                         f"interface that carries lab traffic"]
        assert m.state() == before
