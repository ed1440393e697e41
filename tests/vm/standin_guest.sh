#!/bin/sh
# INSTALLER STAND-IN, the guest's half (test only: tests/vm/standin.py says why and what).
# Runs in the Debian installer itself (busybox ash, d-i's in-target and debconf), started
# in the background by the test's preseed/early_command: sh standin_guest.sh BASE_URL
#
# It waits until the host says the installer stopped (BASE_URL/go appears once the mirror
# answered 404 for an installer component), then does in the installer the part that
# cannot run here (partman, base-installer, grub-installer): it writes the test's Debian
# image to the boot disk and mounts its root on /target. Then what finish-install does:
# the preseed's late_command, read from the installer's own debconf database and run as
# d-i's preseed_command runs it (sh -c), and the reboot.
# Progress goes to the serial console as "FLEET-VM-STANDIN <event>" lines.
base=$1
# not a child of the installer's debconf frontend any more (that session has ended)
unset DEBIAN_HAS_FRONTEND DEBCONF_REDIR DEBCONF_READFD DEBCONF_WRITEFD DEBIAN_FRONTEND \
    DEBCONF_OLD_FD_BASE
exec </dev/null 3>&- 4>&- 5>&- 6>&- 7>&-

mark() { printf '\nFLEET-VM-STANDIN %s\n' "$*" > /dev/ttyS0; logger -t fleet-standin "$*"; }
fail() { mark "failed: $*"; exit 1; }

mark waiting
until wget -q -O /tmp/fleet-go "$base/go"; do sleep 5; done
mark taking-over

# the block and ext4 drivers: udebs the mirror lacks, taken from the kernel's .deb
mkdir -p /tmp/fleet-modules
wget -q -O /tmp/fleet-modules.tar "$base/modules.tar" || fail "modules.tar"
tar -C /tmp/fleet-modules -xf /tmp/fleet-modules.tar || fail "modules.tar unpacked"
for m in $(cat /tmp/fleet-modules/order); do
    grep -q "^$(basename "$m" .ko) " /proc/modules || insmod "/tmp/fleet-modules/$m" \
        || fail "insmod $m"
done
i=0
until [ -b /dev/vda ]; do
    i=$((i + 1)); [ $i -le 30 ] || fail "no /dev/vda"; sleep 1
done

# the disk, new and all zeros: only its segments that hold data (standin.write_segments;
# no pipefail in busybox ash: each stage reports its own failure)
mark writing-disk
rm -f /tmp/fleet-pipe-failed
wget -q -O /tmp/fleet-disk.map "$base/disk.map" || fail "disk.map"
while read -r n seek _; do
    { wget -q -O - "$base/disk-$n" || echo "wget $n" >> /tmp/fleet-pipe-failed; } \
        | dd of=/dev/vda bs=1M seek="$seek" conv=notrunc 2>/dev/null \
        || echo "dd $n" >> /tmp/fleet-pipe-failed
done < /tmp/fleet-disk.map
[ ! -e /tmp/fleet-pipe-failed ] || fail "disk image: $(cat /tmp/fleet-pipe-failed)"
sync
# the re-read failed once right after the write (why is not known: its error now goes to
# the console); wait for udev's probing of the new contents and retry
i=0
until udevadm settle; blockdev --rereadpt /dev/vda 2>/dev/ttyS0; do
    i=$((i + 1)); [ $i -le 15 ] || fail "re-reading the partition table"; sleep 2
done
i=0
until [ -b /dev/vda2 ]; do
    i=$((i + 1)); [ $i -le 30 ] || fail "no /dev/vda2"; sleep 1
done
mkdir -p /target
mount -t ext4 /dev/vda2 /target || fail "mounting the root on /target"
mark disk-written

# finish-install's 07preseed: preseed_command preseed/late_command, minus its error dialog
late=$(DEBIAN_FRONTEND=noninteractive debconf-get preseed/late_command 2>/dev/null)
[ -n "$late" ] || fail "no preseed/late_command in the installer's debconf database"
lines=$(wc -l < /var/log/syslog)
mark "late-command-begin sha256=$(printf %s "$late" | sha256sum | cut -d' ' -f1)"
sh -c "$late" > /tmp/fleet-late-command.log 2>&1
rc=$?
cat /tmp/fleet-late-command.log > /dev/ttyS0
mark "late-command-syslog-begin"
tail -n +$((lines + 1)) /var/log/syslog | grep -v fleet-standin > /dev/ttyS0
mark "late-command-exit $rc"
umount /target || fail "unmounting /target"
sync
[ "$rc" = 0 ] || exit 1  # the host sees the exit status and stops the run
mark rebooting
reboot -f
