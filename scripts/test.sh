#!/usr/bin/env bash
# The test suite (as root): everything the tests use (scripts/setup-test.sh: every set-up part,
# the test-only tools, the pinned dev tools in .venv), static checks, cargo tests, then pytest
# (unit + integration on real namespaces), all Python from .venv. Ends by checking that nothing
# of ours is left in the kernel. Artifacts (the report screenshots, junit XML) go to artifacts/.
#
# The unit tests run on every core (pytest-xdist: they share no state and build no lab); the
# integration tests one at a time (they measure, and a neighbour would be in their numbers).
#
# ./scripts/test.sh --quick: the inner loop while changing the code (under 5 minutes on 2
# cores, nothing installed: run the full command once first): ruff, mypy, the unit tests and
# one real paired lab; the per-test durations go to artifacts/junit-quick-unit.xml and
# artifacts/junit-quick-lab.xml (the full command's: artifacts/junit-unit.xml, junit.xml).
# Arguments after the options go to both pytest commands (e.g. -x, --slow, -k EXPR).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:/usr/local/go/bin:$PATH"
mkdir -p artifacts
py=.venv/bin/python

if [ "${1:-}" = "--quick" ]; then
  shift
  [ -x "$py" ] || { echo "test.sh --quick: no .venv yet; run ./scripts/setup.sh && ./scripts/test.sh once" >&2; exit 2; }
  echo "== ruff"; "$py" -m ruff check src tests benchmarks
  echo "== mypy"; "$py" -m mypy
  echo "== pytest (unit, on every core)"
  "$py" -m pytest -q -p no:cacheprovider -n auto --junitxml=artifacts/junit-quick-unit.xml \
    tests/unit "$@"
  echo "== pytest (one real paired lab)"
  "$py" -m pytest -q -p no:cacheprovider --junitxml=artifacts/junit-quick-lab.xml \
    "tests/integration/test_paired_run.py::test_an_interleaved_session_measures_every_path_round_by_round" "$@"
  exit 0
fi

echo "== test set-up"; ./scripts/setup-test.sh

echo "== ruff"; "$py" -m ruff check src tests benchmarks
echo "== mypy"; "$py" -m mypy
echo "== cargo test (probe)"; cargo test -q --release --locked --manifest-path probe/Cargo.toml
echo "== cargo test (native)"; cargo test -q --release --locked --manifest-path native/Cargo.toml
echo "== pytest (unit, on every core)"
"$py" -m pytest -q -p no:cacheprovider -n auto --junitxml=artifacts/junit-unit.xml tests/unit "$@"
echo "== pytest (the rest: integration, one at a time)"
"$py" -m pytest -q -p no:cacheprovider --junitxml=artifacts/junit.xml --ignore=tests/unit "$@"
echo "== leftovers"
left=$( { ip netns list | grep -E '^vnb[0-9a-f]{4}-'; ip -o link | grep ': vnb';
          iptables-save | grep -i vnb; } || true)
if [ -n "$left" ]; then echo "kernel objects left behind:"; echo "$left"; exit 1; fi
echo "nothing left behind"
