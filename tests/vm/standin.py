"""The INSTALLER STAND-IN of the full-install VM test, for the part of the Debian installer
that cannot run here (tests/vm, `make test-vm`, docs/pxe.md).

Why: the deb.debian.org that this host reaches is a package-registry front that serves
.deb files but answers 404 for every .udeb (the installer's own components, e.g.
pool/main/a/apt-setup/apt-mirror-setup_0.182_all.udeb), so the netboot installer stops
right after reading the mirror's indexes, before partitioning, and no other Debian
mirror or image is reachable. Everything before that point runs for real (PXE, the
installer, its preseed, the mirror's indexes); the test checks that the installer was
stopped by exactly this, and reports the install itself as not run.

What the stand-in does instead, on the host, in the installer's place and order:
1. the base system: debootstrap of bookworm from the test's mirror proxy (cached as a
   tarball under the mirror's cache dir), with the packages the preseed asks for
   (pkgsel/include: curl, ca-certificates, openssh-server) and a kernel;
2. the rendered preseed's late_command, exactly as rendered (with the test-only Salt
   lines, vmbed.salt_late_commands), by `sh -c`, from the node's own address (a network
   namespace on the provisioning bridge with stor-1's address, as the installer has), with
   ``/target`` moved to the new root and ``in-target`` a chroot into it (as d-i's is):
   it fetches the token and the rotated key and calls back;
3. the disk: GPT with an EFI system partition (Debian's signed shim and GRUB, as
   grub-installer puts them at /EFI/debian) and an ext4 root made from the tree
   (mkfs.ext4 -d: no loop device or mount), as a qcow2 that replaces the guest's disk;
then the guest is restarted (the installer's reboot) and boots through PXE in local mode.

Run standalone (as root) to build or refresh the cached base system:
    python tests/vm/standin.py --mirror http://deb.debian.org/debian
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

PACKAGES = ["systemd-sysv", "udev", "kmod", "dbus", "linux-image-amd64", "curl",
            "ca-certificates", "openssl", "openssh-server", "iproute2", "passwd"]
ESP_MB, DISK_GB = 128, 8
ESP_TYPE = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
LINUX_TYPE = "0FC63DAF-8483-4772-8E79-3D69D8477DE4"
SHIM = Path("/usr/lib/shim/shimx64.efi.signed")
GRUB = Path("/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed")


def sh(*cmd: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], check=True, text=True, capture_output=True)


def base_tarball(cache: Path, mirror: str, log: Path) -> Path:
    """The debootstrapped base system, built once per package list (mirror-independent)."""
    key = hashlib.sha256(" ".join(PACKAGES).encode()).hexdigest()[:12]
    tar = cache / f"rootfs-bookworm-{key}.tar"
    if tar.exists():
        return tar
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        root = Path(tmp) / "root"
        with log.open("a") as out:
            subprocess.run(["debootstrap", "--variant=minbase",
                            "--include=" + ",".join(PACKAGES), "bookworm", str(root), mirror],
                           check=True, stdout=out, stderr=subprocess.STDOUT)
        sh("rm", "-rf", root / "var/cache/apt/archives", root / "var/lib/apt/lists")
        (root / "var/cache/apt/archives/partial").mkdir(parents=True)
        (root / "var/lib/apt/lists/partial").mkdir(parents=True)
        sh("tar", "-C", root, "-cf", f"{tar}.new", ".")
        Path(f"{tar}.new").rename(tar)
    return tar


def prepare_target(tar: Path, target: Path, *, hostname: str, domain: str, mirror: str,
                   root_uuid: str, nameserver: str) -> None:
    """Unpack the base system and do what d-i's own steps do before the late_command:
    hostname, apt sources (apt-setup), network (netcfg: DHCP), fstab (partman)."""
    target.mkdir(parents=True)
    sh("tar", "-C", target, "-xf", tar)
    (target / "etc/hostname").write_text(hostname + "\n")
    (target / "etc/hosts").write_text(f"127.0.0.1 localhost\n127.0.1.1 {hostname}.{domain} "
                                      f"{hostname}\n")
    (target / "etc/resolv.conf").unlink(missing_ok=True)
    (target / "etc/resolv.conf").write_text(f"search {domain}\nnameserver {nameserver}\n")
    (target / "etc/apt/sources.list").write_text(f"deb {mirror} bookworm main\n")
    (target / "etc/systemd/network").mkdir(parents=True, exist_ok=True)
    (target / "etc/systemd/network/50-dhcp.network").write_text(
        "[Match]\nName=en*\n[Network]\nDHCP=ipv4\n")
    wants = target / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    (wants / "systemd-networkd.service").symlink_to("/lib/systemd/system/systemd-networkd.service")
    (target / "etc/fstab").write_text(f"UUID={root_uuid} / ext4 errors=remount-ro 0 1\n")
    # the serial console, as d-i sets it up when it ran on one (finish-install)
    getty = wants / "serial-getty@ttyS0.service"
    getty.symlink_to("/lib/systemd/system/serial-getty@.service")


def run_late_command(late: str, target: Path, netns: str, log: Path) -> int:
    """The rendered late_command by ``sh -c`` in the node's namespace, ``/target`` moved
    to ``target``, ``in-target`` a chroot with /proc, /sys and /dev as d-i mounts them."""
    helper = target.parent / "bin"
    helper.mkdir(exist_ok=True)
    (helper / "in-target").write_text(f"#!/bin/sh\nexec chroot {target} \"$@\"\n")
    (helper / "in-target").chmod(0o755)
    script = "; ".join([
        f"mount -t proc proc {target}/proc", f"mount -t sysfs sys {target}/sys",
        f"mount --rbind /dev {target}/dev",
        f"export PATH={helper}:/usr/sbin:/usr/bin:/sbin:/bin",
        f"sh -c {_quote(late.replace('/target', str(target)))}",
        "rc=$?", f"umount -R {target}/dev {target}/sys {target}/proc", "exit $rc"])
    with log.open("a") as out:
        # a clean environment, as the installer's (none of this host's PIP_*, proxies...)
        proc = subprocess.run(["env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                               "ip", "netns", "exec", netns, "unshare", "-m",
                               "--propagation", "private", "sh", "-c", script],
                              stdout=out, stderr=subprocess.STDOUT, timeout=1800)
    return proc.returncode


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def make_disk(target: Path, work: Path, disk: Path, root_uuid: str) -> None:
    """GPT: ESP (shim + GRUB at /EFI/debian, a grub.cfg that boots the root's kernel) and
    the ext4 root from ``target``; written as qcow2 to ``disk``."""
    kernels = sorted((target / "boot").glob("vmlinuz-*"))
    assert kernels, "no kernel in the base system"
    version = kernels[-1].name.removeprefix("vmlinuz-")
    esp = work / "esp.img"
    esp.unlink(missing_ok=True)
    sh("mkfs.vfat", "-C", "-n", "EFI", esp, str(ESP_MB * 1024))
    (work / "grub.cfg").write_text(
        "set timeout=1\nset default=0\n"
        f"search --no-floppy --fs-uuid --set=root {root_uuid}\n"
        "menuentry 'Debian GNU/Linux (fleet test-vm)' {\n"
        f"  linux /boot/vmlinuz-{version} root=UUID={root_uuid} ro console=tty0 "
        "console=ttyS0,115200n8\n"
        f"  initrd /boot/initrd.img-{version}\n}}\n")
    sh("mmd", "-i", esp, "::/EFI", "::/EFI/debian")
    sh("mcopy", "-i", esp, SHIM, "::/EFI/debian/shimx64.efi")
    sh("mcopy", "-i", esp, GRUB, "::/EFI/debian/grubx64.efi")
    sh("mcopy", "-i", esp, work / "grub.cfg", "::/EFI/debian/grub.cfg")
    root_img = work / "root.img"
    root_img.unlink(missing_ok=True)
    root_mb = DISK_GB * 1024 - ESP_MB - 2
    sh("mkfs.ext4", "-q", "-F", "-U", root_uuid, "-L", "root", "-d", target, root_img,
       f"{root_mb}M")
    raw = work / "disk.raw"
    raw.unlink(missing_ok=True)
    sh("truncate", "-s", f"{DISK_GB}G", raw)
    first = 2048
    root_start = first + ESP_MB * 2048
    layout = (f"label: gpt\nstart={first}, size={ESP_MB * 2048}, type={ESP_TYPE}\n"
              f"start={root_start}, size={root_mb * 2048}, type={LINUX_TYPE}\n")
    subprocess.run(["sfdisk", "-q", str(raw)], input=layout, text=True, check=True,
                   capture_output=True)
    sh("dd", f"if={esp}", f"of={raw}", "bs=1M", "seek=1", "conv=notrunc", "status=none")
    sh("dd", f"if={root_img}", f"of={raw}", "bs=1M", f"seek={root_start // 2048}",
       "conv=notrunc,sparse", "status=none")
    sh("qemu-img", "convert", "-O", "qcow2", raw, disk)
    for f in (raw, root_img, esp):
        f.unlink()


class NodeNs:
    """A network namespace on the test's provisioning bridge with the node's address: where
    the stand-in runs the late_command, as the installer does from the node."""

    def __init__(self, test_ns: str, bridge: str, address: str, tag: str) -> None:
        self.test_ns, self.bridge, self.address = test_ns, bridge, address
        self.name = f"fleet-vm-node-{tag}"
        self.outer, self.inner = f"fvmi{tag}", f"fvmj{tag}"

    def __enter__(self) -> NodeNs:
        sh("ip", "netns", "add", self.name)
        try:
            sh("ip", "-n", self.name, "link", "set", "lo", "up")
            sh("ip", "link", "add", self.outer, "type", "veth", "peer", "name", self.inner)
            sh("ip", "link", "set", self.outer, "netns", self.test_ns)
            sh("ip", "link", "set", self.inner, "netns", self.name)
            sh("ip", "-n", self.test_ns, "link", "set", self.outer, "master", self.bridge)
            sh("ip", "-n", self.test_ns, "link", "set", self.outer, "up")
            sh("ip", "-n", self.name, "addr", "add", self.address, "dev", self.inner)
            sh("ip", "-n", self.name, "link", "set", self.inner, "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
        subprocess.run(["ip", "link", "del", self.outer], capture_output=True)
        subprocess.run(["ip", "-n", self.test_ns, "link", "del", self.outer],
                       capture_output=True)


def new_uuid() -> str:
    return str(uuid.uuid4())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", default="http://deb.debian.org/debian")
    ap.add_argument("--cache", type=Path,
                    default=Path.home() / ".cache" / "fleet-vm-mirror")
    args = ap.parse_args()
    tar = base_tarball(args.cache, args.mirror, args.cache / "debootstrap.log")
    print(tar, shutil.disk_usage(tar.parent).free // 2**30, "GiB free")


if __name__ == "__main__":
    main()
