#!/usr/bin/env bash
# Install everything `python3 -m vnetbench run` needs on a fresh Debian 12 machine, as root.
# Idempotent; one line per thing it relies on, saying what it found or how to get it:
# Debian packages (iproute2, iptables, ethtool, the iperf3 and sockperf peers...), the Python
# package, the Rust probe and native helpers (cargo), the current wireguard-go (Go module
# proxy; Debian's older build drops datagrams under load), then scripts/setup.d/*.sh (MariaDB,
# sysbench and OpenMPI; a JDK, Maven and the Hadoop jars; Docker; QEMU). What only the tests
# and benchmarks use (chromium, mininet, qperf, tcpdump, pytest...) is in
# scripts/setup-test.sh, which scripts/test.sh runs first.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:/usr/local/go/bin:$PATH"

if [ "$(id -u)" != 0 ]; then
  echo "setup.sh: run as root (it installs packages and vnetbench builds namespaces)" >&2
  exit 2
fi

. scripts/lib.sh
APT_PACKAGES=(iproute2 iptables nftables ethtool procps kmod psmisc sockperf iperf3
              wireguard-tools cgroup-tools bridge-utils util-linux)
apt_install setup "${APT_PACKAGES[@]}"
echo "setup: Debian packages: ${APT_PACKAGES[*]}"

require setup python3 "apt-get install python3 (3.11 or newer)"
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "setup: python3 is older than 3.11: install Python 3.11 or newer" >&2
  exit 2
fi
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[parquet]'
python3 -c 'import pandas, pyarrow' \
  || { echo "setup: pandas or pyarrow is missing after pip install" >&2; exit 1; }
echo "setup: python package vnetbench $(python3 -c 'import vnetbench; print(vnetbench.__version__)') (pip install -e .)"

require setup cargo "install Rust with rustup (https://rustup.rs: curl -sSf https://sh.rustup.rs | sh -s -- -y), then run setup again"
mkdir -p src/vnetbench/bin
cargo build -q --release --locked --manifest-path probe/Cargo.toml
cargo build -q --release --locked --manifest-path native/Cargo.toml
install -m 0755 probe/target/release/vnetbench-probe src/vnetbench/bin/
install -m 0755 native/target/release/vnetbench-linkem native/target/release/vnetbench-tunnel \
  src/vnetbench/bin/
echo "setup: native programs: $(src/vnetbench/bin/vnetbench-probe --version), vnetbench-linkem, vnetbench-tunnel (cargo build)"

if [ ! -x src/vnetbench/bin/wireguard-go ]; then
  require setup go "install a current Go from https://go.dev/dl into /usr/local/go (Debian's golang is too old for wireguard-go), then run setup again" version
  GOBIN="$PWD/src/vnetbench/bin" go install golang.zx2c4.com/wireguard@latest
  mv src/vnetbench/bin/wireguard src/vnetbench/bin/wireguard-go
fi
echo "setup: wireguard-go: $(first_line src/vnetbench/bin/wireguard-go --version) (src/vnetbench/bin)"
for part in scripts/setup.d/*.sh; do
  [ -e "$part" ] || continue
  echo "setup: $(basename "$part")"
  bash "$part"
done
echo "setup: done"
