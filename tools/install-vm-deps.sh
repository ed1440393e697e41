#!/usr/bin/env bash
# Host packages of the full-install VM test (make test-vm, tests/vm, docs/pxe.md), as root,
# on top of tools/install-pxe-deps.sh (QEMU, OVMF, shim, GRUB, nginx, the netboot
# installer): qemu-img (qemu-utils) for the guest's disk, curl, and what the installer
# stand-in uses (tests/vm/standin.py: debootstrap and the archive keyring, mkfs.ext4,
# mkfs.vfat and mtools, sfdisk, Debian's signed shim and GRUB). The test's mirror is a caching nginx proxy of deb.debian.org: this host must
# reach it over HTTP (checked here, so a run that cannot install says so at once).
# Idempotent: installs only what is missing; no service is started.
set -euo pipefail
pkgs=(qemu-utils curl nginx-light iproute2 debian-archive-keyring debootstrap e2fsprogs
      dosfstools mtools fdisk shim-signed grub-efi-amd64-signed)
need=()
for pkg in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need+=("$pkg")
done
if ((${#need[@]} > 0)); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-vm-deps: missing packages: ${need[*]}; run as root or: sudo apt-get install ${need[*]}" >&2
    exit 1
  fi
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 0755 "$policy" && own_policy=1
    trap '[[ $own_policy == 1 ]] && rm -f "$policy"' EXIT
  fi
  echo "install-vm-deps: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
upstream=${FLEET_VM_UPSTREAM:-http://deb.debian.org}
if ! curl -fsS -m 30 -o /dev/null "$upstream/debian/dists/bookworm/InRelease"; then
  echo "install-vm-deps: $upstream is not reachable from this host: the VM test's mirror" \
       "proxies it, so the full install cannot run here (set FLEET_VM_UPSTREAM to a" \
       "reachable Debian mirror)" >&2
  exit 1
fi
