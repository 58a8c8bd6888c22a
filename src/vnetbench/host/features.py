"""What this host's kernel and toolbox can do, found by trying (in a scratch namespace).

Each kernel feature is tested by creating the object in a throw-away ``vnb<id>-probe``
namespace (deleted at once), because /proc/config.gz may be missing or lie about modules.
Results are cached per process. ``vnetbench doctor`` prints them with what each one means;
the lab checks a layer's ``requires`` against them before building anything.
"""

from __future__ import annotations

import json
import os
import platform
import re
import secrets
import shutil
import subprocess
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from vnetbench.errors import LabError, MissingToolError
from vnetbench.host.programs import Program


@dataclass(frozen=True)
class Feature:
    """A kernel feature a layer or link emulation may need."""

    probe: str
    """A shell line that creates it in namespace ``$NS`` (names begin with ``{p}``; the
    features after ``veth`` may use its ``{p}v0``): run as it stands on real machines and
    here, except that here the ``ip -n "$NS"`` ones go in one batch."""
    module: str
    """The kernel module behind it (for the "modprobe it" advice)."""
    advice: str
    """What a host without it cannot do."""


FEATURES: dict[str, Feature] = {
    "veth": Feature('ip -n "$NS" link add {p}v0 type veth peer name {p}v1', "veth",
                    "no layer can work"),
    "bridge": Feature('ip -n "$NS" link add {p}b0 type bridge', "bridge",
                      "bridge, nat, vxlan, wireguard, userspace unavailable"),
    "macvlan": Feature('ip -n "$NS" link add {p}m0 link {p}v0 type macvlan mode bridge',
                       "macvlan", "macvlan unavailable"),
    "ipvlan": Feature('ip -n "$NS" link add {p}i0 link {p}v0 type ipvlan mode l2', "ipvlan",
                      "ipvlan unavailable"),
    "vxlan": Feature('ip -n "$NS" link add {p}x0 type vxlan id 1 dstport 4789 dev {p}v0',
                     "vxlan", "vxlan unavailable"),
    "wireguard": Feature('ip -n "$NS" link add {p}w0 type wireguard', "wireguard",
                         "wireguard uses the userspace wireguard-go instead of the kernel "
                         "module"),
    "tun": Feature('ip -n "$NS" tuntap add dev {p}t0 mode tun', "tun",
                   "userspace layer unavailable"),
    "netem": Feature('tc -n "$NS" qdisc replace dev {p}v0 root netem delay 1ms', "sch_netem",
                     "delay/jitter/loss use the userspace link emulator (vnetbench-linkem) "
                     "instead"),
    "tbf": Feature('tc -n "$NS" qdisc replace dev {p}v0 root tbf rate 1mbit burst 32k latency '
                   '50ms', "sch_tbf", "link rate shaping unavailable"),
    "nfqueue": Feature('ip netns exec "$NS" iptables -w -t mangle -A PREROUTING -j NFQUEUE '
                       '--queue-num 0', "xt_NFQUEUE",
                       "without netem, delay/jitter/loss cannot be emulated"),
    "br_netfilter": Feature('ip netns exec "$NS" test -d /proc/sys/net/bridge', "br_netfilter",
                            "bridged traffic cannot pass iptables (bridge_nf option, link "
                            "emulator)"),
}
"""Every kernel feature vnetbench looks for, in the order they are tried."""

_IP_LINE = 'ip -n "$NS" '
_LINK_FEATURES = tuple(name for name, f in FEATURES.items() if f.probe.startswith(_IP_LINE))
"""The features made by one ``ip`` line each: probed here in one ``ip -batch``."""

FEATURE_ADVICE: dict[str, str] = {name: f.advice for name, f in FEATURES.items()}


@dataclass(frozen=True)
class ToolStatus:
    name: str
    path: str | None
    note: str


CACHE_DIR = Path("/run/vnetbench")


def _cache_file() -> Path:
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return CACHE_DIR / f"features-{platform.release()}-{boot}.json"


@lru_cache(maxsize=1)
def kernel_features() -> dict[str, bool]:
    """Feature name -> present (needs root); probed once per boot, then cached in /run."""
    cache = _cache_file()
    with suppress(OSError, ValueError):
        cached = json.loads(cache.read_text())
        if set(cached) == set(FEATURES):
            return {k: bool(v) for k, v in cached.items()}
    found = probe_kernel_features()
    with suppress(OSError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(found))
    return found


def probe_kernel_features() -> dict[str, bool]:
    """Feature name -> present, tested in a scratch namespace (needs root)."""
    p = f"vnb{secrets.token_hex(2)}"
    ns = f"{p}-probe"
    subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
    try:
        lines = [FEATURES[name].probe.removeprefix(_IP_LINE).format(p=p)
                 for name in _LINK_FEATURES]
        proc = subprocess.run(["ip", "-n", ns, "-force", "-batch", "-"], input="\n".join(lines) + "\n",
                              capture_output=True, text=True, check=False)
        failed = {int(m) for m in re.findall(r"Command failed -:(\d+)", proc.stderr)}
        if proc.returncode != 0 and not failed:  # ip could not run the batch at all
            why = next((line for line in proc.stderr.splitlines() if line.strip()), "no message")
            raise LabError(f"cannot probe the kernel's features: `ip -n {ns} -batch` failed "
                           f"({why.strip()}); in a chroot, make its root a mount point "
                           "(mount --bind DIR DIR)")
        found = {name: (k + 1) not in failed for k, name in enumerate(_LINK_FEATURES)}
        env = {**os.environ, "NS": ns}
        for name, feature in FEATURES.items():  # the others: each its own shell line
            if name in found:
                continue
            needs_veth = "{p}v0" in feature.probe
            found[name] = (found["veth"] or not needs_veth) and subprocess.run(
                ["sh", "-c", feature.probe.format(p=p)], env=env, capture_output=True,
                check=False).returncode == 0
        return found
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def tool_statuses(declared: Sequence[Program] = ()) -> list[ToolStatus]:
    """The programs vnetbench uses, where they are and what lacking one means, ``declared``
    (the layers' programs, ``layers.registry.layer_programs``) after the system's."""
    from vnetbench.host.binaries import find_binary

    out = []
    for name, note in [
        ("ip", "iproute2: required"), ("bridge", "iproute2: required for vxlan"),
        ("tc", "iproute2: required for link shaping"),
        ("iptables-restore", "required for nat and the link emulator"),
        ("sockperf", "the sockperf workload; probe fidelity benchmark"),
        ("qperf", "probe fidelity benchmark"),
        ("iperf3", "the iperf3 workload; probe fidelity benchmark"),
        ("mn", "mininet: lab speed benchmark"),
        ("dockerd", "docker.io: required for the docker-* layers"),
    ]:
        out.append(ToolStatus(name, shutil.which(name), note))
    try:
        out.append(ToolStatus("vnetbench-probe", str(find_binary("vnetbench-probe")),
                              "built by scripts/setup.sh"))
    except MissingToolError as exc:
        out.append(ToolStatus("vnetbench-probe", None, str(exc)))
    for program in declared:
        try:
            out.append(ToolStatus(program.name, program.find(), program.purpose))
        except MissingToolError as exc:
            out.append(ToolStatus(program.name, None, str(exc)))
    return out


def find_wireguard_go() -> str:
    """The userspace WireGuard: $VNETBENCH_WIREGUARD_GO, the package's bin/, then PATH."""
    from vnetbench.host.binaries import PACKAGE_BIN, env_override

    override = env_override("VNETBENCH_WIREGUARD_GO")  # set but unusable: MissingToolError
    if override:
        return str(override)
    if os.access(PACKAGE_BIN / "wireguard-go", os.X_OK):
        return str(PACKAGE_BIN / "wireguard-go")
    on_path = shutil.which("wireguard-go")
    if on_path:
        return on_path
    raise MissingToolError(
        "wireguard-go not found and the kernel has no WireGuard module: run scripts/setup.sh "
        "(it builds the version it pins with Go), or set VNETBENCH_WIREGUARD_GO"
    )
