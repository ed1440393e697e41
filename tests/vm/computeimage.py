"""The compute VM tier's guest image (tests/vm/test_compute_vm.py): Ubuntu 24.04 from the
archive, built the way the lab's Ubuntu image is (fleet.lab.ubuntu_image: debootstrap
noble with the archive keyring, the apt sources base.apt renders, Salt ``site.salt.version``
in /opt/salt by the root's own pip under requirements.txt, the lab image's Salt units),
plus what a booted guest needs: the archive's kernel (linux-image-virtual: the generic
kernel without the firmware and extra modules a QEMU guest never loads) with its
initramfs, and the packages the applied states install (so that converging under TCG
does not download them; the states still check and hold them).

The result is cached under the VM tier's cache (FLEET_VM_CACHE) by the hash of its
inputs: the kernel, the initramfs and an ext4 root in a qcow2 file, which each guest uses
as the backing file of its own copy-on-write overlay.

Run as a script (root) to build or find the image: ``python tests/vm/computeimage.py``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from fleet.apt.archive import keyring  # noqa: E402
from fleet.lab import image as debian_image  # noqa: E402
from fleet.lab import ubuntu_image  # noqa: E402
from fleet.lab.paths import Paths  # noqa: E402
from fleet.lab.run import run  # noqa: E402

log = logging.getLogger("fleet.vm")

CACHE = Path(os.environ.get("FLEET_VM_CACHE", Path.home() / ".cache" / "fleet-vm-mirror"))
# the states' packages (codesync.server and .client, slurm, slurm.controller and .compute;
# compute.valkey and compute.worker, applied where FLEET_MINIRAY_SRC names miniray)
STATE_PACKAGES = ["rsync", "nftables", "nfs-kernel-server", "nfs-common", "munge",
                  "slurm-client", "slurmctld", "slurmd", "python3.12", "python3.12-venv",
                  "logrotate"]
PACKAGES = [p for p in ubuntu_image.PACKAGES if p != "linux-image-generic"] + [
    "linux-image-virtual", "openssh-client", *STATE_PACKAGES]
DAEMONS = ["nfs-server.service", "munge.service", "slurmctld.service", "slurmd.service"]
DISK_GB = 6
# GPU FAKE: the inventory's tinybox-pro has 8 GPUs, whose device files slurmd's gres.conf
# names (as the lab does with podman --device /dev/null:/dev/nvidiaN): the null device
FAKE_GPUS = 8


@dataclass(frozen=True)
class Image:
    kernel: Path
    initrd: Path
    disk: Path  # qcow2, the guests' backing file
    built: bool
    seconds: float


def input_hash(version: str, url: str, constraints: bytes) -> str:
    h = hashlib.sha256()
    h.update(Path(__file__).read_bytes())
    h.update(Path(ubuntu_image.__file__).read_bytes())
    h.update(" ".join(PACKAGES).encode())
    h.update(f"{url} {version} {DISK_GB}".encode())
    h.update(constraints)
    return h.hexdigest()[:16]


def build(cache: Path = CACHE) -> Image:
    """The cached image, or a new one (about 10 minutes on this 2-core host, most of it
    the download and Salt's pip install)."""
    t0 = time.monotonic()
    paths = Paths(ROOT)
    url = ubuntu_image.mirror()
    version = debian_image.salt_pin(paths)
    constraints = (ROOT / "requirements.txt").read_bytes()
    out = cache / f"compute-noble-{input_hash(version, url, constraints)}"
    done = out / ".complete"
    img = Image(out / "vmlinuz", out / "initrd.img", out / "root.qcow2", False, 0.0)
    if done.exists():
        return Image(img.kernel, img.initrd, img.disk, False, time.monotonic() - t0)
    ubuntu_image.probe(url)
    ring = keyring("ubuntu", ROOT / ".cache" / "packages")
    work = out.with_name(out.name + ".build")
    rootfs = work / "rootfs"
    debian_image.fresh_root(rootfs)
    real_packages = ubuntu_image.PACKAGES
    ubuntu_image.PACKAGES = PACKAGES  # the lab's debootstrap call, with this list
    try:
        ubuntu_image._bootstrap(rootfs, url, ring)
    finally:
        ubuntu_image.PACKAGES = real_packages
    env = ubuntu_image.CHROOT_ENV
    run(["chroot", rootfs, "apt-get", "install", "-y", "-q", "--no-install-recommends",
         *ubuntu_image.BUILD_DEPS], env=env, timeout=1800)
    run(["chroot", rootfs, "python3", "-m", "venv", "/opt/salt"], timeout=600)
    ubuntu_image._install_salt(paths, rootfs, version)
    run(["chroot", rootfs, "apt-get", "purge", "-y", "-q", "--auto-remove",
         *ubuntu_image.BUILD_DEPS], env=env, timeout=1800)
    run(["chroot", rootfs, "apt-get", "clean"], timeout=600)
    _configure(rootfs)
    out.mkdir(parents=True, exist_ok=True)
    kernels = sorted((rootfs / "boot").glob("vmlinuz-*"))
    assert kernels, "linux-image-virtual installed no kernel"
    release = kernels[-1].name.removeprefix("vmlinuz-")
    run(["chroot", rootfs, "update-initramfs", "-c", "-k", release], env=env, timeout=1800)
    shutil.copyfile(kernels[-1], img.kernel)
    shutil.copyfile(rootfs / "boot" / f"initrd.img-{release}", img.initrd)
    raw = work / "root.raw"
    run(["mkfs.ext4", "-q", "-F", "-L", "fleetroot", "-d", rootfs, raw, f"{DISK_GB}G"],
        timeout=1800)
    run(["qemu-img", "convert", "-O", "qcow2", raw, img.disk], timeout=1800)
    shutil.rmtree(work)
    done.touch()
    return Image(img.kernel, img.initrd, img.disk, True, time.monotonic() - t0)


def _configure(rootfs: Path) -> None:
    """The lab image's configuration (Salt units, no baked identity), then what a booted
    guest needs that a container gets from podman: its initramfs (the lab image turns it
    off), a root file system to mount, a serial console, and the FAKE GPUs' device files."""
    debian_image._configure(rootfs)
    etc = rootfs / "etc"
    conf = etc / "initramfs-tools" / "update-initramfs.conf"
    conf.write_text("update_initramfs=yes\nbackup_initramfs=no\n")
    (etc / "fstab").write_text("LABEL=fleetroot / ext4 defaults 0 1\n")
    (etc / "tmpfiles.d" / "fleet-vm-fake-gpus.conf").write_text(
        "# GPU FAKE (tests/vm/computeimage.py): the null device as each GPU's file\n"
        + "".join(f"c /dev/nvidia{i} 0666 root root - 1:3\n" for i in range(FAKE_GPUS)))
    # the guest's address and name come from the kernel command line (fleet.vm=...),
    # written by this unit before the network and Salt start
    (rootfs / "usr" / "local" / "sbin" / "fleet-vm-net").write_text(NET_SCRIPT)
    (rootfs / "usr" / "local" / "sbin" / "fleet-vm-net").chmod(0o755)
    unit = etc / "systemd" / "system" / "fleet-vm-net.service"
    unit.write_text(NET_UNIT)
    wants = etc / "systemd" / "system" / "multi-user.target.wants"
    (wants / "fleet-vm-net.service").symlink_to("/etc/systemd/system/fleet-vm-net.service")
    # the daemons the states enable and start where their role runs (the packages enable
    # them: on a worker the NFS server would start, and slurmd fail without its config)
    run(["systemctl", f"--root={rootfs}", "disable", *DAEMONS], timeout=300)
    (wants / "systemd-networkd.service").unlink(missing_ok=True)
    (wants / "systemd-networkd.service").symlink_to(
        "/usr/lib/systemd/system/systemd-networkd.service")


# fleet.vm=<hostname>,<address/prefix>,<salt master>,<ip>=<name>;...: the test's, per guest
NET_SCRIPT = """#!/bin/sh
# tests/vm/computeimage.py: the guest's name, address and /etc/hosts from fleet.vm=
set -eu
arg=$(tr ' ' '\\n' < /proc/cmdline | sed -n 's/^fleet\\.vm=//p')
name=${arg%%,*}; rest=${arg#*,}; addr=${rest%%,*}; rest=${rest#*,}
master=${rest%%,*}; hosts=${rest#*,}
echo "$name" > /etc/hostname
hostname "$name"
printf 'id: %s\nmaster: %s\n' "$name" "$master" > /etc/salt/minion.d/fleet-vm.conf
mkdir -p /etc/systemd/network
printf '[Match]\\nType=ether\\n[Network]\\nAddress=%s\\n' "$addr" \\
  > /etc/systemd/network/10-fleet-vm.network
printf '127.0.0.1 localhost\\n' > /etc/hosts
echo "$hosts" | tr ';' '\\n' | tr '=' ' ' >> /etc/hosts
"""
NET_UNIT = """[Unit]
Description=fleet test-vm: the guest's name and address from the kernel command line
DefaultDependencies=no
After=local-fs.target
Before=systemd-networkd.service network-pre.target salt-minion.service
Wants=network-pre.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/fleet-vm-net
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
"""


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    img = build()
    print(f"{img.disk}: {'built' if img.built else 'cached'} in {img.seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
