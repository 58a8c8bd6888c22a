#!/usr/bin/env bash
# The vm backend's tools: QEMU (qemu-system-x86, with SeaBIOS/qboot and iPXE as its
# dependencies), busybox-static (the guests' initramfs /init), kmod (depmod for the guest
# kernel's modules.dep) and iproute2, and Debian's stock guest kernel (linux-image-amd64),
# fetched with `apt-get download` and unpacked into /var/cache/vnetbench/vm-kernel/ instead of
# being installed (no second kernel in the host's /boot, no initramfs or bootloader hooks; see
# src/vnetbench/backends/vm/guest_kernel.py). The guest kernel is fetched once: delete that
# directory to get the current one. The part `vm` (scripts/setup.sh --with vm). Idempotent;
# run as root, after scripts/setup-python.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."

. scripts/lib.sh
py=$(venv_python 50-vm)
apt_install 50-vm qemu-system-x86 busybox-static kmod iproute2
if ! "$py" -m vnetbench.backends.vm.guest_kernel check >/dev/null 2>&1; then
  echo "50-vm: fetching the guest kernel (apt-get download linux-image-amd64)"
  apt-get update -qq
  "$py" -m vnetbench.backends.vm.guest_kernel fetch
fi
echo "50-vm: $(qemu-system-x86_64 --version | head -n 1)"
echo "50-vm: $("$py" -m vnetbench.backends.vm.guest_kernel check)"
