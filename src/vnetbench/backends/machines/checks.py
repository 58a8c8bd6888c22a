"""Checking real machines before anything is built on them.

``probe_machine`` learns a machine's facts in one ssh round trip (a shell script printing
sections: who we are, kernel, the underlay's address, MTU, speed, driver and offloads, the
tools and kernel features asked about, the routes), plus three tiny round trips for the
clock. Kernel features are found as ``vnetbench.host.features`` finds them locally: by creating
each kind of link in a scratch namespace ``vnb<hex>-probe`` that is always deleted.
``machine_problems`` and ``duplicate_problems`` turn facts into one line per problem, each
saying what to fix; ``check_machines`` connects to every machine in parallel and raises one
error listing every problem of every machine, or returns the open connections.

The parsers are pure functions of the script's output (tests replay recorded text).
"""

from __future__ import annotations

import os
import re
import secrets
import select
import shlex
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vnetbench.backends.machines.ssh import SshConnection, trusted_root
from vnetbench.errors import LabError, UnsupportedError, VnetbenchError
from vnetbench.host.features import FEATURE_ADVICE, FEATURES
from vnetbench.lab.spec import MachineSpec

SECTION = "@@vnb "
"""Starts each section header line of the probe script's output."""

ALL_FEATURES: tuple[str, ...] = tuple(FEATURES)
"""The kernel features a machine is probed for (``host.features.FEATURES``: each one's shell
line, run in the scratch namespace ``$NS``), veth first."""
_NEEDS_VETH = tuple(name for name, f in FEATURES.items() if name != "veth" and "{p}v0" in f.probe)
"""The features whose probe uses veth's ``{p}v0``."""

TOOL_PACKAGES: dict[str, str] = {
    "ip": "iproute2", "tc": "iproute2", "bridge": "iproute2", "ss": "iproute2",
    "ethtool": "ethtool", "iptables": "iptables", "iptables-save": "iptables",
    "iptables-restore": "iptables", "nft": "nftables", "qperf": "qperf", "tcpdump": "tcpdump",
    "ping": "iputils-ping", "docker": "docker.io", "dockerd": "docker.io",
    "containerd": "containerd", "python3": "python3", "sha256sum": "coreutils",
    "nsenter": "util-linux", "unshare": "util-linux", "sysctl": "procps", "modprobe": "kmod",
    "tar": "tar", "gzip": "gzip", "taskset": "util-linux", "perf": "linux-perf",
}
"""Debian package providing each tool vnetbench may need on a machine, beside the programs
the layers and workloads declare (``tool_package``)."""


def tool_package(tool: str) -> str | None:
    """The Debian package with ``tool``: the table above, or a layer's or workload's
    program."""
    if tool in TOOL_PACKAGES:
        return TOOL_PACKAGES[tool]
    from vnetbench.layers.registry import layer_programs
    from vnetbench.workloads.registry import programs

    return next((p.package for p in (*layer_programs(), *programs())
                 if p.name == tool and p.package), None)


# ethtool -k feature -> the short name `ethtool -K` accepts (others keep their own name)
OFFLOAD_NAMES: dict[str, str] = {
    "rx-checksumming": "rx", "tx-checksumming": "tx", "scatter-gather": "sg",
    "tcp-segmentation-offload": "tso", "udp-fragmentation-offload": "ufo",
    "generic-segmentation-offload": "gso", "generic-receive-offload": "gro",
    "large-receive-offload": "lro", "rx-vlan-offload": "rxvlan", "tx-vlan-offload": "txvlan",
    "ntuple-filters": "ntuple", "receive-hashing": "rxhash", "rx-gro-hw": "gro-hw",
    "rx-udp-gro-forwarding": "udp-gro-forwarding",
}

CLOCK_SAMPLES = 3


@dataclass(frozen=True)
class MachineFacts:
    """What a machine is and has, as probed over ssh."""

    target: str
    hostname: str
    kernel: str
    uid: int
    clock_offset_s: float
    """Remote clock minus local clock, at the midpoint of the quickest of a few round trips."""
    clock_rtt_s: float
    underlay: str
    address: str | None
    prefix: int | None
    mtu: int | None
    speed_mbps: int | None
    driver: str | None
    offloads: dict[str, bool]
    """From ``ethtool -k`` when ethtool exists (``tso``, ``gso``, ``gro``, ``lro``, ``rx``,
    ``tx``...), else empty."""
    features: dict[str, bool]
    """Kernel features probed (empty when not root: they cannot be)."""
    tools: dict[str, str | None]
    """Tool name -> its path on the machine, or None."""
    routes: tuple[str, ...]
    """``ip -4 -o route show table all`` lines."""
    interfaces: tuple[str, ...] = ()
    """Every interface the machine has (to say which exist when the underlay does not)."""

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["routes"] = list(self.routes)
        out["interfaces"] = list(self.interfaces)
        return out


# ---------------------------------------------------------------- the probe script


def probe_script(underlay: str, tools: Sequence[str], features: Sequence[str], prefix: str) -> str:
    """The shell script printing every section ``parse_probe_output`` reads. Kernel features
    are tried (when root) in scratch namespace ``<prefix>-probe``, deleted on every exit."""
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise ValueError(f"unknown kernel features {unknown}; known: {', '.join(ALL_FEATURES)}")
    if not re.fullmatch(r"vnb[0-9a-f]{4}", prefix):
        raise ValueError(f"prefix {prefix!r} is not vnb<4 hex>")
    tried = [f for f in ALL_FEATURES if f in features]
    if any(f in _NEEDS_VETH for f in tried) and "veth" not in tried:
        tried.insert(0, "veth")
    u = shlex.quote(underlay)
    lines = [
        'export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin" LC_ALL=C',
        f"U={u}",
        f"sec() {{ printf '{SECTION}%s\\n' \"$1\"; }}",
        "has() { command -v \"$1\" >/dev/null 2>&1; }",
        "sec uid; id -u",
        "sec hostname; uname -n",
        "sec kernel; uname -r",
        "sec links; ip -o link show 2>/dev/null",
        'sec addr; ip -o -4 addr show dev "$U" 2>/dev/null',
        'sec mtu; cat "/sys/class/net/$U/mtu" 2>/dev/null',
        'sec speed; cat "/sys/class/net/$U/speed" 2>/dev/null',
        'sec driver; readlink "/sys/class/net/$U/device/driver" 2>/dev/null'
        ' || { has ethtool && ethtool -i "$U" 2>/dev/null | sed -n "s/^driver: //p"; }',
        'sec offloads; has ethtool && ethtool -k "$U" 2>/dev/null',
        "sec tools",
    ]
    lines += [f'printf "%s %s\\n" {shlex.quote(t)} "$(command -v {shlex.quote(t)} 2>/dev/null)"'
              for t in tools]
    lines += ["sec routes; ip -4 -o route show table all 2>/dev/null"]
    lines += ["sec features"]
    if tried:
        lines += [
            f"NS={prefix}-probe",
            'if [ "$(id -u)" = 0 ] && has ip; then',
            '  if err=$(ip netns add "$NS" 2>&1); then',
            # deleted however the script ends: normally, or a signal when ssh goes away
            "    trap 'ip netns del \"$NS\" 2>/dev/null' EXIT",
            "    trap 'exit 1' HUP INT TERM PIPE",
            '    try() { f=$1; shift; if "$@" >/dev/null 2>&1; then echo "$f 1"; else echo "$f 0"; fi; }',
        ]
        lines += [f"    try {name} {FEATURES[name].probe.format(p=prefix)}" for name in tried]
        lines += [
            '    ip netns del "$NS" 2>/dev/null; trap - EXIT',
            '  else echo "error ip netns add: $err"; fi',
            "fi",
        ]
    lines += ["sec end", ""]
    return "\n".join(lines)


def split_sections(text: str) -> dict[str, str]:
    """Section name -> its text, from the probe script's output."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith(SECTION):
            current = sections.setdefault(line[len(SECTION):].strip(), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(body).strip("\n") for name, body in sections.items()}


def parse_interfaces(text: str) -> tuple[str, ...]:
    """Interface names from ``ip -o link show`` (``eth1@if5`` -> ``eth1``)."""
    names = []
    for line in text.splitlines():
        parts = line.split(": ", 2)
        if len(parts) >= 2 and parts[0].strip().isdigit():
            names.append(parts[1].split("@")[0].strip())
    return tuple(names)


def parse_address(text: str) -> tuple[str | None, int | None]:
    """(address, prefix length) of the first IPv4 address in ``ip -o -4 addr show dev X``."""
    found = re.search(r"\binet (\d+\.\d+\.\d+\.\d+)/(\d+)", text)
    return (found.group(1), int(found.group(2))) if found else (None, None)


def parse_int(text: str) -> int | None:
    """An integer file's value (e.g. /sys/class/net/X/mtu); None when absent, negative (the
    speed of a link that has none) or not a number."""
    with_value = text.strip()
    try:
        value = int(with_value)
    except ValueError:
        return None
    return value if value >= 0 else None


def parse_driver(text: str) -> str | None:
    """The driver's name from ``readlink .../device/driver`` (a path) or ``ethtool -i``."""
    value = text.strip().splitlines()[0].strip() if text.strip() else ""
    return value.rstrip("/").rsplit("/", 1)[-1] or None


def parse_offloads(text: str) -> dict[str, bool]:
    """``ethtool -k``'s top-level features (short names where ``ethtool -K`` has one) -> on."""
    out: dict[str, bool] = {}
    for line in text.splitlines():
        if not line or line[0].isspace() or line.startswith("Features for") or ":" not in line:
            continue
        name, _, value = line.partition(":")
        state = value.split()
        if state and state[0] in ("on", "off"):
            out[OFFLOAD_NAMES.get(name.strip(), name.strip())] = state[0] == "on"
    return out


def parse_tools(text: str, tools: Sequence[str]) -> dict[str, str | None]:
    """Tool -> path from ``name path`` lines (a name alone: not found)."""
    found: dict[str, str | None] = dict.fromkeys(tools)
    for line in text.splitlines():
        name, _, path = line.strip().partition(" ")
        if name in found:
            found[name] = path.strip() or None
    return found


def parse_features(text: str) -> dict[str, bool]:
    """Feature -> present from ``name 1|0`` lines (``error ...`` lines are skipped)."""
    out: dict[str, bool] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] in ("0", "1") and parts[0] in FEATURES:
            out[parts[0]] = parts[1] == "1"
    return out


def parse_clock(text: str) -> float:
    """Seconds since the epoch from ``date +%s.%N`` (a ``date`` without %N: whole seconds)."""
    value = text.strip()
    try:
        return float(value)
    except ValueError:
        head = value.split(".")[0]
        if head.isdigit():
            return float(head)
        raise LabError(f"cannot read the clock from `date +%s.%N`: {value!r}") from None


def clock_estimate(samples: Sequence[tuple[float, float, float]]) -> tuple[float, float]:
    """(offset, rtt) from (local send, remote clock, local receive) samples: the remote clock
    minus the local one at the round trip's midpoint, for the quickest round trip."""
    if not samples:
        raise ValueError("no clock samples")
    sent, remote, received = min(samples, key=lambda s: s[2] - s[0])
    return remote - (sent + received) / 2, received - sent


def parse_probe_output(target: str, underlay: str, text: str, tools: Sequence[str],
                       clock: tuple[float, float]) -> MachineFacts:
    """The facts the probe script printed (``clock``: offset and rtt measured apart)."""
    sections = split_sections(text)
    if "end" not in sections or not sections.get("uid", "").strip().isdigit():
        tail = " | ".join(text.strip().splitlines()[-3:]) or "nothing"
        raise LabError(f"host {target}: the machine probe did not run to its end (printed: {tail})")
    address, prefix = parse_address(sections.get("addr", ""))
    routes = tuple(line.strip() for line in sections.get("routes", "").splitlines() if line.strip())
    return MachineFacts(
        target=target,
        hostname=sections.get("hostname", "").strip(),
        kernel=sections.get("kernel", "").strip(),
        uid=int(sections["uid"].strip()),
        clock_offset_s=clock[0],
        clock_rtt_s=clock[1],
        underlay=underlay,
        address=address,
        prefix=prefix,
        mtu=parse_int(sections.get("mtu", "")),
        speed_mbps=parse_int(sections.get("speed", "")),
        driver=parse_driver(sections.get("driver", "")),
        offloads=parse_offloads(sections.get("offloads", "")),
        features=parse_features(sections.get("features", "")),
        tools=parse_tools(sections.get("tools", ""), tools),
        routes=routes,
        interfaces=parse_interfaces(sections.get("links", "")),
    )


def measure_clock(conn: SshConnection, samples: int = CLOCK_SAMPLES,
                  timeout: float = 30.0) -> tuple[float, float]:
    """(offset, rtt) of the machine's clock: ``samples`` tiny round trips over one session
    (a remote loop answering each line with ``date +%s.%N``: no ssh start-up in the round
    trip), the quickest kept."""
    proc = subprocess.Popen(conn.argv(["sh", "-c", "while read -r _; do date +%s.%N; done"]),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    deadline = time.monotonic() + timeout
    taken = []
    try:
        for k in range(samples + 1):  # the first also waits for the remote shell: not kept
            sent = time.time()
            proc.stdin.write(b"\n")
            proc.stdin.flush()
            line = _read_line(proc.stdout.fileno(), deadline)
            received = time.time()
            if line is None:
                raise LabError(f"host {conn.target}: no answer from `date` within {timeout:g}s "
                               f"(measuring the clock)")
            if k:
                taken.append((sent, parse_clock(line), received))
    except OSError as exc:
        raise LabError(f"host {conn.target}: measuring the clock failed: {exc}") from exc
    finally:
        with suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return clock_estimate(taken)


def _read_line(fd: int, deadline: float) -> str | None:
    """One line from ``fd`` (unbuffered), None at EOF or the deadline."""
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 1)
        if not chunk:
            return None
        data += chunk
    return data.decode(errors="replace")


def probe_machine(conn: SshConnection, underlay: str, tools: Sequence[str],
                  features: Sequence[str]) -> MachineFacts:
    """The machine's facts: one round trip for the probe script, a few for the clock."""
    script = probe_script(underlay, tools, features, f"vnb{secrets.token_hex(2)}")
    out = conn.run_script(script, timeout=120).stdout
    return parse_probe_output(conn.target, underlay, out, tools, measure_clock(conn))


# ---------------------------------------------------------------- problems


def tool_advice(tool: str) -> str:
    package = tool_package(tool)
    return f"apt-get install {package}" if package else "install it or put it on root's PATH"


def feature_advice(feature: str) -> str:
    module = FEATURES[feature].module if feature in FEATURES else feature
    return f"load the module (modprobe {module}) or use a kernel that has it"


def machine_problems(facts: MachineFacts, *, need_features: Sequence[str],
                     need_tools: Sequence[str]) -> list[str]:
    """One line per problem of the machine, each ``host <target>: ...`` saying what to fix."""
    where = f"host {facts.target}: "
    out = []
    if facts.uid != 0:
        out.append(f"{where}logged in as uid {facts.uid}, not root: log in as root (e.g. "
                   f"`ssh: root@...`); vnetbench creates namespaces and interfaces there")
    exists = facts.underlay in facts.interfaces if facts.interfaces else facts.mtu is not None
    if not exists:
        others = [n for n in facts.interfaces if n != "lo"]
        has = f" (it has: {', '.join(others)})" if others else ""
        out.append(f"{where}no interface {facts.underlay}{has}: set `underlay` to the interface "
                   f"that carries lab traffic")
    elif facts.address is None:
        out.append(f"{where}{facts.underlay} has no IPv4 address: give it one (ip addr add "
                   f"ADDRESS/PREFIX dev {facts.underlay}) or set `underlay` to an interface that has one")
    for tool in need_tools:
        if not facts.tools.get(tool):
            out.append(f"{where}{tool} not found: {tool_advice(tool)}")
    if facts.uid == 0 and need_features:
        if not facts.features:
            out.append(f"{where}could not probe kernel features (`ip netns add` failed or `ip` "
                       f"is missing): check that iproute2 is installed and /run/netns is writable")
        else:
            for feature in need_features:
                if not facts.features.get(feature):
                    why = FEATURE_ADVICE.get(feature, f"{feature} unavailable")
                    out.append(f"{where}kernel {facts.kernel} lacks {feature} ({why}): "
                               f"{feature_advice(feature)}")
    return out


def _destination(spec: MachineSpec) -> tuple[str, int | None]:
    return spec.ssh.strip().lower(), spec.port


def duplicate_problems(specs: Sequence[MachineSpec],
                       facts: Sequence[MachineFacts] | None = None) -> list[str]:
    """The same destination listed twice; with ``facts`` (aligned with ``specs``), also two
    destinations that are the same machine (same hostname and underlay address)."""
    out = []
    first: dict[tuple[str, int | None], int] = {}
    for k, spec in enumerate(specs):
        key = _destination(spec)
        if key in first:
            out.append(f"host {spec.ssh}: listed twice in `hosts` (entries {first[key] + 1} and "
                       f"{k + 1}): list each machine once")
        else:
            first[key] = k
    if facts is not None:
        if len(facts) != len(specs):
            raise ValueError("facts must be aligned with specs")
        seen: dict[tuple[str, str], int] = {}
        for k, (spec, fact) in enumerate(zip(specs, facts, strict=True)):
            if fact.address is None or first.get(_destination(spec)) != k:
                continue
            same = (fact.hostname, fact.address)
            if same in seen:
                other = specs[seen[same]].ssh
                out.append(f"host {spec.ssh}: is the same machine as {other} (hostname "
                           f"{fact.hostname}, {fact.underlay} {fact.address}): list each machine once")
            else:
                seen[same] = k
    return out


def _where(target: str, message: str) -> str:
    """``message`` as one line starting ``host <target>: ``."""
    line = " ".join(message.split())
    prefix = f"host {target}: "
    return line if line.startswith(prefix) else prefix + line


def check_machines(specs: Sequence[MachineSpec], control_dir: Path, *, need_features: Sequence[str],
                   need_tools: Sequence[str], connect_timeout: float = 10.0,
                   ) -> tuple[list[SshConnection], list[MachineFacts]]:
    """Connect to every machine (in parallel) and probe it; UnsupportedError listing every
    problem of every machine (one line each; the connections closed), else the open
    connections and the facts, in the order of ``specs``. Every kernel feature is probed
    (the facts record them all); ``need_features`` are the ones whose absence is a problem."""
    duplicates = duplicate_problems(specs)
    if duplicates:
        raise UnsupportedError("\n".join(duplicates))
    if not specs:
        return [], []
    conns = [SshConnection(spec, control_dir, connect_timeout=connect_timeout) for spec in specs]
    features = list(dict.fromkeys([*ALL_FEATURES, *need_features]))

    def check(k: int) -> MachineFacts | str:
        conn, spec = conns[k], specs[k]
        try:
            conn.open()
            facts = probe_machine(conn, spec.underlay, need_tools, features)
            root = conn.run(["sh", "-c", "\n".join(trusted_root(make=False))], check=False,
                            timeout=30.0)
            if root.returncode != 0:  # a planted work root: refused before anything is written
                return _where(spec.ssh, root.stderr.strip() or "the work root is not vnetbench's")
            return facts
        except VnetbenchError as exc:
            return _where(spec.ssh, str(exc))
        except ValueError as exc:  # an unknown feature name: the caller's mistake
            raise LabError(str(exc)) from exc

    try:
        with ThreadPoolExecutor(max_workers=min(16, len(specs)), thread_name_prefix="vnb-ssh") as pool:
            results = list(pool.map(check, range(len(specs))))
    except BaseException:
        _close_all(conns)
        raise
    problems: list[str] = []
    facts = [r for r in results if isinstance(r, MachineFacts)]
    for result in results:
        if isinstance(result, str):
            problems.append(result)
        else:
            problems += machine_problems(result, need_features=need_features, need_tools=need_tools)
    probed = [spec for spec, r in zip(specs, results, strict=True) if isinstance(r, MachineFacts)]
    problems += duplicate_problems(probed, facts)
    if problems:
        _close_all(conns)
        raise UnsupportedError("\n".join(problems))
    return conns, facts


def _close_all(conns: Sequence[SshConnection]) -> None:
    for conn in conns:
        conn.close()

