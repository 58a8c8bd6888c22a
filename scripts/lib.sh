# Shared by scripts/setup.sh and scripts/setup.d/*.sh (sourced from the repository root).

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
  echo "$who: apt-get install ${missing[*]}"
  apt-get update -qq
  local created_policy=0
  if [ "$stay_down" = 1 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    created_policy=1
  fi
  local rc=0
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null || rc=$?
  if [ "$created_policy" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
  return $rc
}
