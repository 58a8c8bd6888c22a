"""Choosing the ``vm`` backend's accelerator: KVM when a guest really boots with it, else TCG.

``/dev/kvm`` existing says little: on this project's machines it is KVM-PVM, where QEMU
with ``-cpu host`` aborts setting an MSR and a stock kernel hangs right after the real-mode
setup. So ``choose_accel`` boots a throw-away guest (no lab NICs, 1 vCPU, 512 MiB) with KVM
and gives it ``kvm_timeout`` seconds to answer through its agent; if it does not, it boots
one with TCG to prove that works and to time it. The choice, why, both boot times and what
KVM did are cached as JSON (``/var/cache/vnetbench/vm-accel.json``), keyed by QEMU's
version, the guest kernel, the host kernel and /dev/kvm, so ``doctor`` and runs reuse it;
``refresh=True`` (``python3 -m vnetbench.backends.vm.accel --refresh``) tests again.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from vnetbench.backends.vm.find import find_qemu
from vnetbench.backends.vm.guest_kernel import GuestKernel, find_kernel
from vnetbench.backends.vm.qemu import Guest, GuestSpec
from vnetbench.errors import LabError, VnetbenchError

ACCEL_CACHE = Path("/var/cache/vnetbench/vm-accel.json")
KVM_DEVICE = Path("/dev/kvm")
KVM_TIMEOUT_S = 20.0
TCG_TIMEOUT_S = 150.0
TEST_MEMORY_MIB = 512
SHUTDOWN_GRACE_S = 5.0


@dataclass(frozen=True)
class AccelChoice:
    """The accelerator guests get, why, and the boot test's figures."""

    accel: str
    """``kvm`` or ``tcg``."""
    reason: str
    boot_seconds: float
    """Seconds from starting QEMU to the agent's first answer, with the chosen accelerator."""
    kvm: str
    """What the KVM test did (one line), or why it was not tried."""
    kvm_boot_seconds: float | None = None
    tested_at: float = 0.0
    """Unix time of the boot test (the cached value's age)."""
    cached: bool = False


def kvm_device_problem(device: Path = KVM_DEVICE) -> str | None:
    """Why KVM cannot be tried at all (None: the device is there and usable)."""
    if not device.exists():
        return f"no {device}"
    if not os.access(device, os.R_OK | os.W_OK):
        return f"{device} is not read-write for this user"
    return None


def cache_key(kernel: GuestKernel, qemu: str, device: Path = KVM_DEVICE) -> dict[str, str]:
    """What the boot test's answer depends on."""
    version = subprocess.run([qemu, "--version"], capture_output=True, text=True,
                             check=False).stdout.splitlines()
    kvm = f"{os.stat(device).st_rdev}" if device.exists() else "absent"
    return {"qemu": version[0] if version else qemu, "guest_kernel": kernel.version,
            "host_kernel": os.uname().release, "kvm_device": kvm}


def boot_test(accel: str, kernel: GuestKernel, timeout: float) -> float:
    """Boot a throw-away guest with ``accel``, run ``true`` in it, power it off; the seconds
    until its agent answered. LabError (with the console tail) if it does not boot."""
    with tempfile.TemporaryDirectory(prefix=f"vnetbench-accel-{accel}-") as tmp:
        spec = GuestSpec(name=f"vnetbench-accel-{accel}", hostname="accel-test", nics=(),
                         vcpus=1, memory_mib=TEST_MEMORY_MIB, accel=accel, work_dir=Path(tmp))
        guest = Guest(spec, kernel)
        started = time.monotonic()
        proc = subprocess.Popen(guest.qemu_argv(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            guest.wait_ready(proc, timeout)
            seconds = time.monotonic() - started
            guest.run(["true"], timeout=timeout)
        finally:
            guest.shutdown(proc, SHUTDOWN_GRACE_S)
            if proc.stderr is not None:
                proc.stderr.close()
    return seconds


def read_cache(path: Path, key: dict[str, str]) -> AccelChoice | None:
    try:
        data = json.loads(path.read_text())
        if data.get("key") != key:
            return None
        return AccelChoice(**{**data["choice"], "cached": True})
    except (OSError, ValueError, TypeError, KeyError):
        return None


def write_cache(path: Path, key: dict[str, str], choice: AccelChoice) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"key": key, "choice": asdict(choice)}, indent=2) + "\n")
    tmp.rename(path)


def _try_kvm(kernel: GuestKernel, timeout: float) -> tuple[float | None, str]:
    """(boot seconds or None, what happened) of the KVM boot test."""
    problem = kvm_device_problem()
    if problem:
        return None, f"not tried: {problem}"
    try:
        seconds = boot_test("kvm", kernel, timeout)
    except VnetbenchError as exc:
        return None, f"failed: {exc}"
    return seconds, f"booted in {seconds:.1f} s"


def choose_accel(cache: Path = ACCEL_CACHE, refresh: bool = False,
                 kvm_timeout: float = KVM_TIMEOUT_S, tcg_timeout: float = TCG_TIMEOUT_S) -> AccelChoice:
    """KVM if a guest boots with it within ``kvm_timeout``, else TCG (cached; see module)."""
    kernel = find_kernel()
    key = cache_key(kernel, find_qemu())
    if not refresh:
        cached = read_cache(cache, key)
        if cached is not None:
            return cached
    kvm_seconds, kvm_said = _try_kvm(kernel, kvm_timeout)
    if kvm_seconds is not None:
        choice = AccelChoice("kvm", f"a guest booted with KVM in {kvm_seconds:.1f} s", kvm_seconds,
                             kvm_said, kvm_seconds, time.time())
    else:
        try:
            tcg_seconds = boot_test("tcg", kernel, tcg_timeout)
        except VnetbenchError as exc:
            raise LabError(f"no accelerator boots a guest: KVM {kvm_said}; TCG: {exc}") from exc
        choice = AccelChoice("tcg", f"KVM {kvm_said.split(':')[0]}; TCG booted in {tcg_seconds:.1f} s",
                             tcg_seconds, kvm_said, None, time.time())
    with contextlib.suppress(OSError):  # not root: test again next time
        write_cache(cache, key, choice)
    return choice


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m vnetbench.backends.vm.accel",
                                     description="Choose (and cache) the vm backend's accelerator.")
    parser.add_argument("--refresh", action="store_true", help="test again, ignoring the cache")
    parser.add_argument("--cache", type=Path, default=ACCEL_CACHE)
    args = parser.parse_args(argv)
    try:
        choice = choose_accel(args.cache, refresh=args.refresh)
    except VnetbenchError as exc:
        print(f"accel: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(asdict(choice), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
