#!/usr/bin/env bash
# The commissioning environment (fleet discover): a kernel and an initramfs built from the
# archive's packages alone, served like the installer as images/commission/{vmlinuz,
# initrd.img} (fleet/discover/boot.py). Its root is the initramfs (nothing is installed or
# mounted); /init (commission/init) takes a lease on the boot NIC and runs
# commission/fleet-commission, which reports to the master and powers off.
#
#   commission/build-image.sh OUT [SUITE] [MIRROR]      (as root; make commission-image)
#
# Needs debootstrap, cpio and zstd, and root (debootstrap). Copy OUT/* into the
# provisioning host's images_dir/commission/.
set -euo pipefail
out=${1:?usage: build-image.sh OUT [SUITE] [MIRROR]}
suite=${2:-bookworm}
mirror=${3:-http://deb.debian.org/debian}
here=$(cd "$(dirname "$0")" && pwd)
root=$(mktemp -d /var/tmp/fleet-commission.XXXXXX)
# the initramfs's / is this directory: mktemp's 0700 would keep every unprivileged process
# out of the whole tree (lldpd's privilege-separated half heard nothing)
chmod 0755 "$root"
trap 'rm -rf "$root"' EXIT

# the tools the report is read with, and what boots them: nothing else
packages=linux-image-amd64,busybox,udhcpc,kmod,udev,iproute2,lldpd,dmidecode,pciutils
packages+=,ethtool,nvme-cli,smartmontools,ipmitool,curl,ca-certificates
debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror"

mkdir -p "$out"
cp "$root"/boot/vmlinuz-* "$out/vmlinuz"
# what a RAM root does not need: docs, locales, the kernel's copy, and the modules of
# hardware a server's commissioning never touches (sound, video capture, wireless, GPUs'
# display drivers: lspci reads PCI devices without their drivers; file systems: nothing is
# mounted), apt's lists and perl (nothing runs them here). The kernel unpacks the whole
# initramfs into RAM: the smaller, the less memory a machine needs to commission
rm -rf "$root"/boot "$root"/usr/share/{doc,man,info,locale,zoneinfo,perl} \
    "$root"/usr/lib/x86_64-linux-gnu/perl "$root"/var/lib/apt/lists "$root"/var/cache/*
kdir=$(echo "$root"/lib/modules/*)
rm -rf "$kdir"/kernel/{sound,fs,drivers/media,drivers/gpu,drivers/iio,drivers/md,net/wireless} \
    "$kdir"/kernel/drivers/{net/wireless,bluetooth,staging}
chroot "$root" depmod "${kdir##*/}"
install -m 0755 "$here/fleet-commission" "$root/usr/local/sbin/fleet-commission"
install -m 0755 "$here/init" "$root/init"
(cd "$root" && find . -xdev | LC_ALL=C sort | cpio -o -H newc --quiet) | zstd -q -12 -T0 > "$out/initrd.img"
ls -l "$out"
