#!/usr/bin/env bash
# Host packages of the full-install VM test (make test-vm, tests/vm, docs/pxe.md), as root,
# on top of tools/install-pxe-deps.sh (QEMU, OVMF, shim, GRUB, nginx, the netboot
# installer): qemu-img (qemu-utils) for the guest's disk, curl, and what the installer
# stand-in uses (tests/vm/standin.py: debootstrap and the archive keyring, mkfs.ext4,
# mkfs.vfat and mtools, sfdisk, Debian's signed shim and GRUB), and chronyd (the bed's NTP
# server, tests/vm/vmbed.py), and rsync (the compute tier's push to the code export,
# tests/vm/test_compute_vm.py; its Ubuntu image is built as the lab's, fleet.lab.ubuntu_image).
# The test's mirror is a caching nginx proxy of deb.debian.org: this host must reach it over
# HTTP (checked here, so a run that cannot install says so at once).
# Idempotent: installs only what is missing; no service is started.
set -euo pipefail
pkgs=(qemu-utils curl nginx-light iproute2 debian-archive-keyring debootstrap e2fsprogs
      dosfstools mtools fdisk shim-signed grub-efi-amd64-signed chrony rsync)
FLEET_APT_NO_START=1 bash "$(dirname "$0")/install-host-deps.sh" "${pkgs[@]}"
upstream=${FLEET_VM_UPSTREAM:-http://deb.debian.org}
if ! curl -fsS -m 30 -o /dev/null "$upstream/debian/dists/bookworm/InRelease"; then
  echo "install-vm-deps: $upstream is not reachable from this host: the VM test's mirror" \
       "proxies it, so the full install cannot run here (set FLEET_VM_UPSTREAM to a" \
       "reachable Debian mirror)" >&2
  exit 1
fi
