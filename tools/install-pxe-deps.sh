#!/usr/bin/env bash
# Host packages of the PXE end-to-end test (make test-pxe, tests/pxe, docs/pxe.md), as root:
# QEMU (TCG is enough), the firmware (SeaBIOS with iPXE NIC ROMs, OVMF), the boot loaders
# the provisioning role serves (iPXE, shim + signed network GRUB), nginx, and the Debian
# netboot installer that CI boots. Idempotent: installs only what is missing.
# nginx and dnsmasq run only inside the test's network namespace: the package's own
# service is kept from starting during the install (policy-rc.d, for this apt-get only).
set -euo pipefail
pkgs=(qemu-system-x86 qemu-utils ipxe-qemu ipxe ovmf nginx-light iproute2
      debian-installer-12-netboot-amd64 grub-efi-amd64-signed shim-signed)
need=()
for pkg in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need+=("$pkg")
done
if ((${#need[@]} == 0)); then
  exec bash "$(dirname "$0")/install-host-deps.sh"
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-pxe-deps: missing packages: ${need[*]}; run as root or: sudo apt-get install ${need[*]}" >&2
  exit 1
fi
policy=/usr/sbin/policy-rc.d
own_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 0755 "$policy" && own_policy=1
  trap '[[ $own_policy == 1 ]] && rm -f "$policy"' EXIT
fi
echo "install-pxe-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
bash "$(dirname "$0")/install-host-deps.sh"
