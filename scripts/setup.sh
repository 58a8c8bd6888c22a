#!/usr/bin/env bash
# Install everything vnetbench needs on a fresh Debian 12 machine, as root. Idempotent:
# Debian packages (iproute2, iptables, measurement peers, chromium for the report test),
# the Python package with its dev tools, the Rust probe and native helpers (cargo), and the
# current wireguard-go (Go module proxy; Debian's older build drops datagrams under load).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:/usr/local/go/bin:$PATH"

if [ "$(id -u)" != 0 ]; then
  echo "setup.sh: run as root (it installs packages and vnetbench builds namespaces)" >&2
  exit 2
fi

. scripts/lib.sh
APT_PACKAGES=(iproute2 iptables nftables ethtool tcpdump iputils-ping procps kmod psmisc
              sockperf qperf iperf3 wireguard-tools mininet cgroup-tools bridge-utils
              chromium fonts-dejavu-core util-linux)
apt_install setup "${APT_PACKAGES[@]}"

echo "setup: python package"
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[dev]'
python3 -c 'import pandas, pyarrow, jsonschema' \
  || { echo "setup: pandas, pyarrow or jsonschema is missing after pip install" >&2; exit 1; }

echo "setup: native programs (cargo)"
mkdir -p src/vnetbench/bin
cargo build -q --release --locked --manifest-path probe/Cargo.toml
cargo build -q --release --locked --manifest-path native/Cargo.toml
install -m 0755 probe/target/release/vnetbench-probe src/vnetbench/bin/
install -m 0755 native/target/release/vnetbench-linkem native/target/release/vnetbench-tunnel \
  src/vnetbench/bin/

if [ ! -x src/vnetbench/bin/wireguard-go ]; then
  echo "setup: wireguard-go (go install golang.zx2c4.com/wireguard)"
  GOBIN="$PWD/src/vnetbench/bin" go install golang.zx2c4.com/wireguard@latest
  mv src/vnetbench/bin/wireguard src/vnetbench/bin/wireguard-go
fi
for part in scripts/setup.d/*.sh; do
  [ -e "$part" ] || continue
  echo "setup: $(basename "$part")"
  bash "$part"
done
echo "setup: done"
