# Shared by scripts/setup.sh, scripts/setup.d/*.sh and scripts/setup-test.sh (sourced from the
# repository root).

# apt_install WHO [--services-stay-down] PACKAGE...: install the Debian packages not yet
# installed (one apt-get run). With --services-stay-down a policy-rc.d that answers 101 keeps
# the packages' scripts from starting their system services (vnetbench starts private
# servers and engines itself); it is removed again unless it was there before.
apt_install() {
  local who=$1; shift
  local stay_down=0
  if [ "${1:-}" = --services-stay-down ]; then stay_down=1; shift; fi
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  if [ "$(id -u)" != 0 ]; then
    echo "$who: ${missing[*]} not installed: run as root to install them" >&2
    return 2
  fi
  echo "$who: apt-get install ${missing[*]}"
  apt-get update -qq
  local rc=0 policy=${VNB_POLICY_RC:-/usr/sbin/policy-rc.d}  # (the variable: for its test)
  # in a subshell whose EXIT trap removes the policy it made even when the install is
  # interrupted (Ctrl-C, SIGTERM): left behind, it would keep every service from starting
  # after later upgrades (the caller's own traps are not touched)
  (
    if [ "$stay_down" = 1 ] && [ ! -e "$policy" ]; then
      trap 'rm -f "$policy"' EXIT
      trap 'exit 130' INT
      trap 'exit 143' TERM
      printf '#!/bin/sh\nexit 101\n' > "$policy"
      chmod 0755 "$policy"
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  ) || rc=$?
  return $rc
}

# first_line CMD...: the first non-empty line CMD prints on stdout (else on stderr, where
# java -version writes), colour codes removed.
first_line() {
  local line
  line=$("$@" 2>/dev/null </dev/null | sed 's/\x1b\[[0-9;]*m//g' | grep -m1 . || true)
  [ -n "$line" ] || line=$("$@" 2>&1 >/dev/null </dev/null | sed 's/\x1b\[[0-9;]*m//g' \
                             | grep -m1 . || true)
  echo "$line"
}

# require WHO TOOL HINT [VERSION-ARG...]: one line with TOOL's version and path (asked with
# VERSION-ARG..., default --version), or one line saying how to get it and exit 2.
require() {
  local who=$1 tool=$2 hint=$3; shift 3
  [ $# -gt 0 ] || set -- --version
  local path version
  if ! path=$(command -v "$tool"); then
    echo "$who: $tool not found: $hint" >&2
    exit 2
  fi
  version=$(first_line "$path" "$@")
  echo "$who: $tool: ${version:-version unknown} ($path)"
}

# The Debian packages every run relies on (scripts/setup.sh installs them; ping is what
# `vnetbench up` suggests trying in a kept lab).
BASE_PACKAGES=(iproute2 iptables nftables ethtool procps kmod psmisc sockperf iperf3
               wireguard-tools cgroup-tools bridge-utils util-linux iputils-ping)

# The opt-in parts of the set-up, each scripts/setup.d/NN-NAME.sh (setup.sh --with NAME,...;
# scripts/setup-test.sh runs them all): what the default comparison does not use.
PARTS=(apps hadoop docker vm kubernetes)

# part_script NAME: the script of part NAME, or nothing.
part_script() {
  local f
  for f in scripts/setup.d/[0-9][0-9]-"$1".sh; do [ -e "$f" ] && echo "$f"; done
  return 0
}

# parse_parts WHO LIST: add LIST's parts (comma separated names, or all) to CHOSEN_PARTS; an
# unknown name is one line saying which exist, and exit 2.
CHOSEN_PARTS=()
parse_parts() {
  local who=$1 name
  local -a names
  IFS=, read -r -a names <<< "$2"
  for name in "${names[@]}"; do
    [ -n "$name" ] || continue
    if [ "$name" = all ]; then CHOSEN_PARTS+=("${PARTS[@]}"); continue; fi
    if [ -z "$(part_script "$name")" ]; then
      local choices
      choices=$(printf '%s, ' "${PARTS[@]}")
      echo "$who: error: no part named '$name' (choose from ${choices}all)" >&2
      exit 2
    fi
    CHOSEN_PARTS+=("$name")
  done
}

# run_parts WHO NAME...: run each named part's script once, in setup.d's order.
run_parts() {
  local who=$1; shift
  local name
  for name in "${PARTS[@]}"; do
    case " $* " in *" $name "*) ;; *) continue ;; esac
    echo "$who: part $name ($(part_script "$name"))"
    bash "$(part_script "$name")"
  done
}

# venv_python WHO: the checkout's virtual environment's python (made by
# scripts/setup-python.sh), or one line saying to make it and exit 2 (call it as
# `py=$(venv_python WHO)`, so that set -e stops the caller too).
venv_python() {
  if [ ! -x "$PWD/.venv/bin/python" ]; then
    echo "$1: no virtual environment at $PWD/.venv: run scripts/setup-python.sh (or scripts/setup.sh) first" >&2
    exit 2
  fi
  echo "$PWD/.venv/bin/python"
}
