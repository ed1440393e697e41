#!/usr/bin/env bash
# Host packages of the PXE end-to-end test (make test-pxe, tests/pxe, docs/pxe.md), as root:
# QEMU (TCG is enough), the firmware (SeaBIOS with iPXE NIC ROMs, OVMF), the boot loaders
# the provisioning role serves (iPXE, shim + signed network GRUB), nginx, and the Debian
# netboot installer that CI boots. Idempotent: installs only what is missing.
# nginx and dnsmasq run only inside the test's network namespace: the package's own
# service is kept from starting during the install (policy-rc.d, for this apt-get only).
# debootstrap, cpio and zstd build the commissioning image it boots (commission/build-image.sh);
# lldpd plays a switch port for the discovery test (tests/pxe/test_discover_pxe.py), only in
# the namespace too: its service is also disabled, so that no host boot ever starts it.
set -euo pipefail
pkgs=(qemu-system-x86 qemu-utils ipxe-qemu ipxe ovmf nginx-light iproute2
      debian-installer-12-netboot-amd64 grub-efi-amd64-signed shim-signed lldpd
      debootstrap cpio zstd)
FLEET_APT_NO_START=1 bash "$(dirname "$0")/install-host-deps.sh" "${pkgs[@]}"
bash "$(dirname "$0")/disable-host-service.sh" lldpd.service
