#!/usr/bin/env bash
# Host packages the lab (make lab, tests/lab) needs on Debian 12 / Ubuntu 24.04, as root:
# podman with runc (crun cannot run on hybrid cgroups), netavark + aardvark-dns for the
# lab network (netavark runs iptables), debootstrap for the minion image. Idempotent: installs only what is missing.
set -euo pipefail

need=()
for pkg in podman runc debootstrap netavark aardvark-dns iptables iproute2 tar; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need+=("$pkg")
done
if ((${#need[@]} == 0)); then
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-lab-deps: missing packages: ${need[*]}; run as root or: sudo apt-get install ${need[*]}" >&2
  exit 1
fi
echo "install-lab-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
