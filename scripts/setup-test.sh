#!/usr/bin/env bash
# What only the tests and benchmarks use, on top of scripts/setup.sh (scripts/test.sh runs it
# first; idempotent and quick when everything is there). One line per tool:
#   chromium, fonts-dejavu-core  the report's browser test (tests/integration/test_report_browser.py)
#   mininet                      the lab speed benchmark (benchmarks/lab_setup.py)
#   qperf                        the probe fidelity benchmark (benchmarks/probe_fidelity.py)
#   tcpdump, iputils-ping        integration tests (packet captures, reachability)
#   openssh-server               sshd for the emulated real machines (tests/integration/machines.py
#                                starts private ones; the package's own service stays down)
#   pytest, mypy, ruff, ...      the Python dev tools (pip extra "dev")
# sockperf and iperf3 (also peers of the benchmarks) are installed by scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib.sh
TEST_PACKAGES=(chromium fonts-dejavu-core mininet qperf tcpdump iputils-ping openssh-server)
apt_install setup-test --services-stay-down openssh-server  # no system sshd on the test box
apt_install setup-test "${TEST_PACKAGES[@]}"
require setup-test chromium "apt-get install chromium"
require setup-test mn "apt-get install mininet"
require setup-test qperf "apt-get install qperf"
require setup-test tcpdump "apt-get install tcpdump"
require setup-test ping "apt-get install iputils-ping" -V
require setup-test sshd "apt-get install openssh-server" -V

DEV=(pytest mypy ruff types-PyYAML pyarrow jsonschema pandas-stubs)
dev_versions() {
  python3 - "$@" <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
try:
    print(", ".join(f"{name} {version(name)}" for name in sys.argv[1:]))
except PackageNotFoundError:
    sys.exit(1)
PY
}
if ! dev_versions "${DEV[@]}" >/dev/null; then
  echo "setup-test: pip install -e .[dev]"
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[dev]'
fi
echo "setup-test: python dev tools: $(dev_versions "${DEV[@]}")"
