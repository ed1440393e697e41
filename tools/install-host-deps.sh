#!/usr/bin/env bash
# Install the host packages fleet needs on Debian 12 / Ubuntu 24.04, plus any package named
# as an argument (tools/install-lab-deps.sh passes the lab's). Idempotent: installs only
# what is missing; runs apt-get update at most once.
set -euo pipefail

need=()
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
command -v dnsmasq >/dev/null 2>&1 || need+=(dnsmasq-base)   # `dnsmasq --test` in the tests
command -v make >/dev/null 2>&1 || need+=(make)
command -v ipmitool >/dev/null 2>&1 || need+=(ipmitool)   # the IPMI fallback of fleet reinstall (tests/bmc)
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need+=("$pkg")
done

if ((${#need[@]} == 0)); then
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-host-deps: missing packages: ${need[*]}; run as root or: sudo apt-get install ${need[*]}" >&2
  exit 1
fi
echo "install-host-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
