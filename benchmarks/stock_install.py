"""Does the install path work on a stock Debian 12? scripts/setup-python.sh in a debootstrap root
filesystem, under chroot, with the distribution's own /usr/bin/python3 (PEP 668: it refuses
``pip install`` into itself), each step timed.

    python3 benchmarks/stock_install.py [--rootfs DIR] [--keep] [--json]

As root. Steps:

1. the stock root filesystem: ``debootstrap --variant=minbase bookworm`` from Debian's mirror
   with the sources a Debian 12 install has (main, bookworm-updates, bookworm-security), made
   once into ``--rootfs`` (default /var/cache/vnetbench/debian12-rootfs; delete it for a new
   one), then copied to a scratch directory so every check starts from the stock image;
2. this checkout's files (``git ls-files``: tracked and new, uncommitted changes included; no
   .venv, build output or programs) copied to /root/vnetbench in it;
3. in the chroot: setup.sh's Debian packages (``BASE_PACKAGES`` of scripts/lib.sh), then
   ``scripts/setup-python.sh`` (python3 and python3-venv from apt, .venv, the locked wheels,
   vnetbench, /usr/local/bin/vnetbench), ``vnetbench --version`` and ``vnetbench doctor``. The
   chroot has no cargo, so the probe and helpers built on this host (src/vnetbench/bin or
   cargo's target/) are copied in first; without them doctor says the probe is missing.

Each chroot command runs in a private mount namespace (``unshare --mount``) that bind-mounts the
copy onto itself (``ip -n`` needs / to be a mount point) and mounts /proc, /sys and /dev in
it: the mounts, and a network namespace doctor's probe would leave, vanish with it, whatever
happens. The scratch copy is removed at the end (``--keep`` keeps it).
The chroot sees the host's network; the host's CA bundle and pip settings (PIP_CERT,
PIP_INDEX_URL, proxies...) are passed in where set, so it reaches PyPI the way this host does.
Exit 0 when every step passed; ``--json`` prints the steps as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ROOTFS = Path("/var/cache/vnetbench/debian12-rootfs")
MIRROR = "http://deb.debian.org/debian"
SECURITY = "http://deb.debian.org/debian-security"
SOURCES = f"""Types: deb
URIs: {MIRROR}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: {SECURITY}
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
CHECKOUT = "/root/vnetbench"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PASSED_ENV = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_DEFAULT_TIMEOUT",
              "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
CA_ENV = ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
PROGRAMS = {"vnetbench-probe": "probe", "vnetbench-linkem": "native", "vnetbench-tunnel": "native"}
STEP_TIMEOUT_S = 1200


@dataclass
class Step:
    name: str
    seconds: float
    returncode: int
    output: str = ""


@dataclass
class Report:
    rootfs: str
    rootfs_made: bool
    steps: list[Step] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    mounts_left: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.returncode == 0 for s in self.steps) and not self.mounts_left


def timed(name: str, argv: list[str], report: Report, env: dict[str, str] | None = None) -> Step:
    """Run argv, record it as a step (output: stdout and stderr, interleaved)."""
    start = time.monotonic()
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=STEP_TIMEOUT_S, env=env, check=False)
        code, out = done.returncode, done.stdout
    except subprocess.TimeoutExpired as exc:
        code, out = -1, f"timed out after {STEP_TIMEOUT_S} s\n{exc.output or ''}"
    step = Step(name, round(time.monotonic() - start, 1), code, out.strip())
    report.steps.append(step)
    return step


def make_rootfs(target: Path, report: Report) -> None:
    """debootstrap into a sibling directory, renamed to ``target`` only when complete."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    step = timed("debootstrap --variant=minbase bookworm",
                 ["debootstrap", "--variant=minbase", "bookworm", str(partial), MIRROR], report)
    if step.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        return
    (partial / "etc/apt/sources.list").unlink(missing_ok=True)
    (partial / "etc/apt/sources.list.d/debian.sources").write_text(SOURCES)
    partial.rename(target)
    report.rootfs_made = True


def chroot_env(scratch: Path) -> dict[str, str]:
    """A clean environment for the chroot: PATH, HOME, locale, and the host's pip and proxy
    settings; CA bundles named by the host's environment are copied in and named there."""
    env = {"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8", "TERM": "dumb",
           "DEBIAN_FRONTEND": "noninteractive"}
    env |= {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    for key in CA_ENV:
        source = os.environ.get(key)
        if source and Path(source).is_file():
            inside = Path("/etc/host-ca") / f"{key.lower()}.pem"
            (scratch / inside.relative_to("/")).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, scratch / inside.relative_to("/"))
            env[key] = str(inside)
    return env


def in_chroot(scratch: Path, script: str, env: dict[str, str]) -> list[str]:
    """argv running ``script`` (bash, in the checkout) in the chroot, inside a private mount
    namespace that makes the copy a mount point (``ip netns exec`` and ``ip -n`` remount below
    /) and mounts /proc, /sys and /dev in it."""
    mounts = (f'mount --bind "$R" "$R" && mount -t proc proc "$R/proc" && '
              f'mount --rbind /sys "$R/sys" && mount --rbind /dev "$R/dev" && '
              f'exec chroot "$R" env -i {env_words(env)} bash -euo pipefail -c "$1"')
    return ["unshare", "--mount", "--propagation", "private", "env", f"R={scratch}", "sh",
            "-c", mounts, "sh", f"cd {CHECKOUT}\n{script}"]


def env_words(env: dict[str, str]) -> str:
    """``K=V`` words for a shell line, each quoted."""
    return " ".join("'" + f"{k}={v}".replace("'", "'\\''") + "'" for k, v in env.items())


def copy_checkout(dest: Path) -> None:
    """This checkout's tracked and new files (``git ls-files``) into ``dest``."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        src = ROOT / name
        if src.is_symlink() or src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name, follow_symlinks=False)


def copy_programs(dest: Path) -> list[str]:
    """The native programs built on this host into ``dest``/src/vnetbench/bin; their names."""
    copied = []
    for name, crate in PROGRAMS.items():
        for src in (ROOT / "src/vnetbench/bin" / name, ROOT / crate / "target/release" / name):
            if src.is_file() and os.access(src, os.X_OK):
                (dest / "src/vnetbench/bin").mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / "src/vnetbench/bin" / name)
                copied.append(name)
                break
    return copied


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below ``path`` in this process's mount namespace."""
    prefix = str(path.resolve())
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            found.append(point)
    return found


def check(rootfs: Path, keep: bool) -> Report:
    """Every step; the scratch copy removed unless ``keep`` (or a mount is still under it)."""
    report = Report(str(rootfs), rootfs_made=False)
    if not (rootfs / "usr/bin").is_dir():
        make_rootfs(rootfs, report)
        if not report.rootfs_made:
            return report
    scratch = Path(tempfile.mkdtemp(prefix="vnb-stock-", dir="/var/tmp"))
    try:
        if timed("copy the stock root filesystem",
                 ["cp", "-a", f"{rootfs}/.", str(scratch)], report).returncode != 0:
            return report
        report.facts["stock python3 before set-up"] = (
            "none (minbase)" if not (scratch / "usr/bin/python3").exists() else "present")
        checkout = scratch / CHECKOUT.lstrip("/")
        copy_checkout(checkout)
        report.facts["programs copied in"] = ", ".join(copy_programs(checkout)) or "none"
        env = chroot_env(scratch)
        steps = [
            ("Debian packages (BASE_PACKAGES)",
             '. scripts/lib.sh; apt_install stock "${BASE_PACKAGES[@]}"'),
            ("scripts/setup-python.sh", "./scripts/setup-python.sh"),
            ("vnetbench --version", "command -v vnetbench; vnetbench --version"),
            ("interpreter", "readlink -f .venv/bin/python; .venv/bin/python --version; "
                            "ls /usr/lib/python3*/EXTERNALLY-MANAGED; du -sh .venv"),
            ("vnetbench doctor", "vnetbench doctor"),
        ]
        for name, script in steps:
            if timed(name, in_chroot(scratch, script, env), report).returncode != 0:
                break
    finally:
        report.mounts_left = mounts_under(scratch)
        if keep or report.mounts_left:
            report.facts["scratch copy kept"] = str(scratch)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="stock_install.py", description=__doc__.split("\n")[0])
    parser.add_argument("--rootfs", type=Path, default=DEFAULT_ROOTFS,
                        help=f"the cached stock root filesystem (default {DEFAULT_ROOTFS})")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy")
    parser.add_argument("--json", action="store_true", help="the steps as one JSON object")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("stock_install.py: run as root (debootstrap, chroot, mounts)", file=sys.stderr)
        return 2
    missing = [t for t in ("debootstrap", "unshare", "chroot", "git") if not shutil.which(t)]
    if missing:
        print(f"stock_install.py: {', '.join(missing)} not found (apt-get install debootstrap "
              "util-linux coreutils git; scripts/setup-test.sh installs debootstrap)",
              file=sys.stderr)
        return 2
    report = check(args.rootfs, args.keep)
    if args.json:
        print(json.dumps(asdict(report) | {"ok": report.ok}, indent=1))
    else:
        print(f"rootfs {report.rootfs} ({'made now' if report.rootfs_made else 'cached'})")
        for step in report.steps:
            mark = "ok" if step.returncode == 0 else f"FAILED (exit {step.returncode})"
            print(f"== {step.name}: {step.seconds:.1f} s, {mark}")
            if step.output:
                print("   " + step.output.replace("\n", "\n   "))
        for key, value in report.facts.items():
            print(f"{key}: {value}")
        print(f"mounts left under the scratch copy: {report.mounts_left or 'none'}")
        print("PASS" if report.ok else "FAIL")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
