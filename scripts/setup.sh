#!/usr/bin/env bash
# Install what `vnetbench run` (the default comparison) needs on a fresh Debian 12 or
# Ubuntu 24.04 machine, as root; with --with, also the heavy parts other workloads and
# backends use. Idempotent; one line per thing it relies on, saying what it found or how to
# get it.
#
#   scripts/setup.sh [--with PART[,PART...]|all]
#
# Always: Debian packages (iproute2, iptables, ethtool, wireguard-tools, ping, the iperf3 and
# sockperf peers...); the Python part (scripts/setup-python.sh: a virtual environment .venv/
# with the pinned dependencies and vnetbench, and /usr/local/bin/vnetbench); the Rust probe and
# native helpers (cargo, from Cargo.lock); wireguard-go at the pinned version below (Go module
# proxy; Debian's older build drops datagrams under load). Cargo and Go themselves are checked,
# not installed.
# Parts (scripts/setup.d/NN-PART.sh), only with --with:
#   apps    MariaDB, sysbench, OpenMPI + mpicc (the oltp and mpi workloads, study 001)
#   hadoop  a JDK, Maven and the Hadoop 3.4.2 jars from Maven Central (the hadoop workload)
#   docker  Debian's docker.io (the docker-* layers)
#   vm      QEMU and Debian's guest kernel (the vm backend)
#   kubernetes  Kubernetes v1.34.4 and flanneld built from the Go module proxy, etcd, containerd,
#           runc, the CNI plugins, a pause image (the kubernetes backend's local test cluster)
# What only the tests and benchmarks use (chromium, mininet, pytest...) and every part are
# installed by scripts/setup-test.sh, which scripts/test.sh runs first.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:/usr/local/go/bin:$PATH"

# wireguard-go: the Go module proxy has no tagged release, so a pseudo-version (2026-05-22),
# checked against the Go checksum database by go install.
WIREGUARD_GO=golang.zx2c4.com/wireguard@v0.0.0-20260522210424-ecfc5a8d5446

. scripts/lib.sh
usage="usage: scripts/setup.sh [--with PART[,PART...]|all]   (parts: ${PARTS[*]})"
while [ $# -gt 0 ]; do
  case "$1" in
    --with) [ $# -ge 2 ] || { echo "setup: error: --with needs a part list; $usage" >&2; exit 2; }
            parse_parts setup "$2"; shift 2 ;;
    --with=*) parse_parts setup "${1#--with=}"; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "setup: error: unknown argument $1; $usage" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" != 0 ]; then
  echo "setup: run as root (it installs packages and vnetbench builds namespaces)" >&2
  exit 2
fi

apt_install setup "${BASE_PACKAGES[@]}"
echo "setup: Debian packages: ${BASE_PACKAGES[*]}"

./scripts/setup-python.sh

require setup cargo "install Rust with rustup (https://rustup.rs: curl -sSf https://sh.rustup.rs | sh -s -- -y), then run setup again"
mkdir -p src/vnetbench/bin
cargo build -q --release --locked --manifest-path probe/Cargo.toml
cargo build -q --release --locked --manifest-path native/Cargo.toml
install -m 0755 probe/target/release/vnetbench-probe src/vnetbench/bin/
install -m 0755 native/target/release/vnetbench-linkem native/target/release/vnetbench-tunnel \
  src/vnetbench/bin/
echo "setup: native programs: $(src/vnetbench/bin/vnetbench-probe --version), vnetbench-linkem, vnetbench-tunnel (cargo build)"

# Built again when missing or (Go at hand) of another version: go version -m names it.
wg=src/vnetbench/bin/wireguard-go
wg_current() {
  [ -x "$wg" ] || return 1
  command -v go >/dev/null || return 0
  go version -m "$wg" 2>/dev/null | grep -q "mod[[:space:]]*${WIREGUARD_GO%@*}[[:space:]]*${WIREGUARD_GO#*@}"
}
if ! wg_current; then
  require setup go "install a current Go from https://go.dev/dl into /usr/local/go (Debian's golang is too old for wireguard-go), then run setup again" version
  echo "setup: go install $WIREGUARD_GO"
  tmp=$(mktemp -d)
  GOBIN="$tmp" go install "$WIREGUARD_GO"
  mv "$tmp/wireguard" "$wg"
  rmdir "$tmp"
fi
echo "setup: wireguard-go: $(first_line "$wg" --version) (${WIREGUARD_GO#*@}, $wg)"

if [ ${#CHOSEN_PARTS[@]} -gt 0 ]; then
  run_parts setup "${CHOSEN_PARTS[@]}"
else
  echo "setup: parts not installed: ${PARTS[*]} (scripts/setup.sh --with all, or --with PART;" \
       "a run that needs one says which)"
fi
echo "setup: done"
