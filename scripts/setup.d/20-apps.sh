#!/usr/bin/env bash
# Real-application workloads (oltp, mpi, iperf3, sockperf): Debian's MariaDB server,
# sysbench, OpenMPI, iperf3 and sockperf, and the MPI micro-benchmark compiled with mpicc
# into src/vnetbench/bin/vnb-mpi-bench: the part `apps` (scripts/setup.sh --with apps; about
# 125 MB of packages, 600 MB installed). Idempotent; run as root. The system MariaDB service is
# never used (vnetbench starts private servers inside lab nodes): it is stopped and disabled.
set -euo pipefail
cd "$(dirname "$0")/../.."

. scripts/lib.sh
# services_stay_down: the package scripts must not start the system mariadb service
apt_install 20-apps --services-stay-down mariadb-server sysbench openmpi-bin libopenmpi-dev \
  iperf3 sockperf

# The system service is not wanted: stop and disable it wherever an init system exists.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl disable --now mariadb.service >/dev/null 2>&1 || true
elif [ -x /etc/init.d/mariadb ]; then
  if /etc/init.d/mariadb status >/dev/null 2>&1; then /etc/init.d/mariadb stop >/dev/null 2>&1 || true; fi
  if command -v update-rc.d >/dev/null 2>&1; then update-rc.d mariadb disable >/dev/null 2>&1 || true; fi
fi

src=src/vnetbench/workloads/mpi/vnb_mpi_bench.c
out=src/vnetbench/bin/vnb-mpi-bench
mkdir -p src/vnetbench/bin
if [ ! -x "$out" ] || [ "$src" -nt "$out" ]; then
  echo "20-apps: mpicc $src -> $out"
  mpicc -O2 -Wall -o "$out.tmp" "$src" -lm
  mv "$out.tmp" "$out"
fi
echo "20-apps: mariadbd $(mariadbd --version | awk '{print $3}'), $(sysbench --version), $(mpirun --version | head -1), $(iperf3 --version | head -1 | cut -d' ' -f1-2), sockperf $(sockperf --version 2>&1 | head -1 | sed 's/.*version //')"
