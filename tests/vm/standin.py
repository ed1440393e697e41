"""The INSTALLER STAND-IN of the full-install VM test, for the part of the Debian installer
that cannot run here (tests/vm, `make test-vm`, docs/pxe.md).

Why: the deb.debian.org that this host reaches is a package-registry front that serves
.deb files but answers 404 for every .udeb (the installer's own components, e.g.
pool/main/a/apt-setup/apt-mirror-setup_0.182_all.udeb), so the netboot installer stops
right after reading the mirror's indexes, before partitioning, and no other Debian
mirror or image is reachable. Everything before that point runs for real (PXE, the
installer, its preseed, the mirror's indexes); the test checks that the installer was
stopped by exactly this, and reports the install itself as not run.

What stands in, and where:
- on the host, before the run: the Debian image the installer would have made. The base
  system by debootstrap of bookworm from the test's mirror proxy (cached as a tarball
  under the mirror's cache dir), with the packages the preseed asks for (pkgsel/include:
  curl, ca-certificates, openssh-server) and a kernel; what d-i's own steps write before
  the late_command (hostname, apt sources, network, fstab); a GPT disk with an EFI system
  partition (Debian's signed shim and GRUB at /EFI/debian, as grub-installer puts them)
  and an ext4 root made from the tree (mkfs.ext4 -d), as the segments of the disk that hold
  data (``make_image``). It also carries the test's Salt (``base_tarball`` says why). Also the
  virtio-blk and ext4 drivers from the installer kernel's own .deb (their udebs are
  missing too: ``kernel_modules``).
- in the guest, in the installer (tests/vm/standin_guest.sh, started by the test's
  preseed/early_command): once the host has seen the installer stop on a missing .udeb,
  it loads those drivers, writes the image's segments to the boot disk, mounts its root on /target,
  runs the preseed's late_command as the installer's finish-install does (read from the
  installer's debconf database; d-i's busybox, in-target and chroot set-up; from the
  node itself: the token, the rotated key, the callback) and reboots.
The files are served to the guest by the test's mirror nginx under /standin/.

Run standalone (as root) to build or refresh the cached base system:
    python tests/vm/standin.py --mirror http://deb.debian.org/debian \
        --wheels .lab/wheelhouse/3008.4 --salt 3008.4
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import lzma
import os
import shutil
import subprocess
import tempfile
import urllib.request
import uuid
from pathlib import Path
from typing import IO

import yaml

# sudo: d-i installs it when root has no password (the preseed's passwd/root-login false);
# python3-venv: for the test's Salt (see base_tarball). The kernel comes with
# state_packages, after the upgrade: one kernel, the newest, in the image.
PACKAGES = ["systemd-sysv", "udev", "kmod", "dbus", "curl", "ca-certificates", "openssl",
            "openssh-server", "iproute2", "passwd", "sudo", "python3-venv"]
ROOT = Path(__file__).resolve().parents[2]
ESP_MB, DISK_GB = 128, 3
ESP_TYPE = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
LINUX_TYPE = "0FC63DAF-8483-4772-8E79-3D69D8477DE4"
SHIM = Path("/usr/lib/shim/shimx64.efi.signed")
GRUB = Path("/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed")


def sh(*cmd: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], check=True, text=True, capture_output=True)


def base_tarball(cache: Path, mirror: str, log: Path, wheels: Path, salt: str) -> Path:
    """The debootstrapped base system, built once per machine and input (this file, Salt's
    version and the wheels' names, :func:`state_packages`; mirror-independent), older ones
    removed. Like d-i's, it is bookworm with its updates and security updates (apt-setup's
    default services, then pkgsel's upgrade). Two things a node does not get from d-i,
    each because the guest under TCG took minutes for it: the packages that base.apt
    installs (:func:`state_packages`; the lab's images carry theirs for the same reason);
    and the test's Salt, in /opt/salt from ``wheels`` (pip in a chroot here, as the lab's
    image does), where a site's node gets salt-minion from Salt's apt repository in the
    late_command: that repository is unreachable here."""
    h = hashlib.sha256(Path(__file__).read_bytes() + salt.encode()
                       + " ".join(state_packages()).encode())
    for whl in sorted(p.name for p in wheels.glob("*.whl")):
        h.update(whl.encode())
    tar = cache / f"rootfs-bookworm-{h.hexdigest()[:12]}.tar"
    if tar.exists():
        return tar
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        root = Path(tmp) / "root"
        try:
            with log.open("a") as out:
                subprocess.run(["debootstrap", "--variant=minbase",
                                "--include=" + ",".join(PACKAGES), "bookworm", str(root),
                                mirror], check=True, stdout=out, stderr=subprocess.STDOUT)
                _upgrade(root, mirror, out)
        finally:  # a failed debootstrap leaves /proc and /sys mounted in the tree
            _unmount_under(root)
        shutil.copytree(wheels, root / "tmp" / "wheels")
        sh("chroot", root, "python3", "-m", "venv", "/opt/salt")
        sh("chroot", root, "/opt/salt/bin/pip", "install", "--quiet", "--no-index",
           "--disable-pip-version-check", "--find-links", "/tmp/wheels", f"salt=={salt}")
        shutil.rmtree(root / "tmp" / "wheels")
        sh("rm", "-rf", root / "var/cache/apt/archives", root / "var/lib/apt/lists")
        (root / "var/cache/apt/archives/partial").mkdir(parents=True)
        (root / "var/lib/apt/lists/partial").mkdir(parents=True)
        sh("tar", "-C", root, "-cf", f"{tar}.new", ".")
        Path(f"{tar}.new").rename(tar)
    for old in cache.glob("rootfs-bookworm-*.tar"):
        if old != tar:
            old.unlink()
    return tar


def state_packages() -> list[str]:
    """What base.apt installs on Debian 12 (salt/base/defaults.yaml): its packages and the
    kernel packages it holds (linux-headers-amd64 pulls in gcc: minutes under TCG)."""
    doc = yaml.safe_load((ROOT / "salt" / "base" / "defaults.yaml").read_text())
    values, debian = doc["values"], doc["osfinger"]["Debian-12"]
    return [*values["packages"], *debian.get("kernel_packages", values["kernel_packages"])]


def _upgrade(root: Path, mirror: str, out: IO[str]) -> None:
    """bookworm-updates and bookworm-security, the upgrade to them (new packages allowed,
    as pkgsel's does: a newer kernel) and :func:`state_packages`, in the chroot; no
    service starts."""
    security = mirror.removesuffix("/debian") + "/debian-security"
    (root / "etc/apt/sources.list").write_text(
        f"deb {mirror} bookworm main\ndeb {mirror} bookworm-updates main\n"
        f"deb {security} bookworm-security main\n")
    policy = root / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    sh("mount", "-t", "proc", "proc", root / "proc")
    for cmd in (["apt-get", "update"],
                ["apt-get", "-y", "upgrade", "--with-new-pkgs"],
                ["apt-get", "-y", "install", *state_packages()]):
        subprocess.run(["chroot", str(root), "env", "DEBIAN_FRONTEND=noninteractive", *cmd],
                       check=True, stdout=out, stderr=subprocess.STDOUT)
    sh("umount", root / "proc")
    policy.unlink()


def _unmount_under(root: Path) -> None:
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for m in sorted((m for m in mounts if m.startswith(f"{root}/")), reverse=True):
        subprocess.run(["umount", "-l", m], capture_output=True)


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


def make_image(target: Path, work: Path, out: Path, root_uuid: str) -> int:
    """A DISK_GB disk: GPT, an ESP (shim + GRUB at /EFI/debian, a grub.cfg that boots the
    root's kernel) and the ext4 root made from ``target``; written to ``out`` as the
    segments of it that hold data (:func:`write_segments`). Returns their MiB."""
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
    first = 2048  # sectors
    root_start = first + ESP_MB * 2048
    root_sectors = DISK_GB * 2**21 - root_start - 2048  # room for the backup GPT
    root_img = work / "root.img"
    root_img.unlink(missing_ok=True)
    sh("mkfs.ext4", "-q", "-F", "-U", root_uuid, "-L", "root", "-d", target, root_img,
       f"{root_sectors // 2}k")
    raw = work / "disk.raw"
    raw.unlink(missing_ok=True)
    sh("truncate", "-s", f"{DISK_GB}G", raw)
    layout = (f"label: gpt\nstart={first}, size={ESP_MB * 2048}, type={ESP_TYPE}\n"
              f"start={root_start}, size={root_sectors}, type={LINUX_TYPE}\n")
    subprocess.run(["sfdisk", "-q", str(raw)], input=layout, text=True, check=True,
                   capture_output=True)
    sh("dd", f"if={esp}", f"of={raw}", "bs=1M", "seek=1", "conv=notrunc,sparse", "status=none")
    sh("dd", f"if={root_img}", f"of={raw}", "bs=1M", f"seek={root_start // 2048}",
       "conv=notrunc,sparse", "status=none")
    mib = write_segments(raw, out)
    for f in (raw, root_img, esp):
        f.unlink()
    return mib


SEGMENT_GAP = 8  # MiB: data this close together goes in one segment


def write_segments(raw: Path, out: Path) -> int:
    """The parts of the sparse file ``raw`` that hold data, in whole MiB: ``out/disk.map``
    (one line per segment: its number, offset and length in MiB) and ``out/disk-N``.
    The guest writes only these to its new (all-zero) disk: a partitioner and mkfs do not
    write the empty rest of a disk either. Not compressed: busybox's gunzip under TCG
    (about 10 MiB/s) was slower than the guest's network. Returns the MiB written."""
    mib = 2**20
    spans: list[list[int]] = []
    with raw.open("rb") as fh:
        fd, size, pos = fh.fileno(), raw.stat().st_size, 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:  # ENXIO: no data after pos
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            first, last = start // mib, -(-end // mib)
            if spans and first - spans[-1][1] <= SEGMENT_GAP:
                spans[-1][1] = last
            else:
                spans.append([first, last])
            pos = end
        lines = []
        for n, (first, last) in enumerate(spans):
            fh.seek(first * mib)
            with (out / f"disk-{n}").open("wb") as seg:
                for _ in range(last - first):
                    seg.write(fh.read(mib))
            lines.append(f"{n} {first} {last - first}\n")
    (out / "disk.map").write_text("".join(lines))
    return sum(last - first for first, last in spans)


def initrd_kernel_version(initrd: Path) -> str:
    """The kernel release whose modules a (gzipped, newc) installer initrd carries."""
    data = gzip.decompress(initrd.read_bytes())
    i = 0
    while data[i:i + 6] == b"070701":
        fields = [int(data[i + 6 + 8 * k:i + 14 + 8 * k], 16) for k in range(13)]
        size, namesize = fields[6], fields[11]
        name = data[i + 110:i + 110 + namesize - 1].decode()
        parts = name.split("/")
        if len(parts) > 2 and parts[:2] == ["lib", "modules"]:
            return parts[2]
        i = (i + 110 + namesize + 3) & ~3
        i = (i + size + 3) & ~3
    raise ValueError(f"{initrd}: no lib/modules/<release> in the initrd")


def _fetch_deb(mirror: str, package: str, debs: Path) -> Path:
    """``package``'s .deb from the mirror (its bookworm or bookworm-security index), not
    through this host's apt, whose lists may be empty or elsewhere."""
    for index in ("debian/dists/bookworm/main/binary-amd64/Packages.xz",
                  "debian-security/dists/bookworm-security/main/binary-amd64/Packages.xz"):
        with urllib.request.urlopen(f"{mirror}/{index}", timeout=120) as resp:
            text = lzma.decompress(resp.read()).decode()
        for stanza in text.split("\n\n"):
            fields = dict(ln.split(": ", 1) for ln in stanza.splitlines() if ": " in ln)
            if fields.get("Package") == package:
                deb = debs / Path(fields["Filename"]).name
                base = mirror + ("/debian-security/" if "security" in index else "/debian/")
                urllib.request.urlretrieve(base + fields["Filename"], f"{deb}.part")
                Path(f"{deb}.part").rename(deb)
                return deb
    raise LookupError(f"{package} is in neither of {mirror}'s bookworm indexes")


def kernel_modules(initrd: Path, cache: Path, mirror: str, out: Path,
                   wanted: tuple[str, ...] = ("virtio_blk", "ext4", "crc32c_generic")) -> str:
    """``out``: a tar of the ``wanted`` modules and their dependencies, from the .deb of the
    installer's kernel (from ``mirror``), with ``order`` (load order, dependencies first);
    built once per kernel release under ``cache``. Returns the kernel release."""
    release = initrd_kernel_version(initrd)
    built = cache / f"modules-{release}-{'-'.join(wanted)}.tar"
    if not built.exists():
        debs = cache / "kernel-debs"
        debs.mkdir(parents=True, exist_ok=True)
        package = f"linux-image-{release}"
        found = sorted(debs.glob(f"{package}_*.deb"))
        deb = found[-1] if found else _fetch_deb(mirror, package, debs)
        _modules_tar(deb, release, wanted, Path(f"{built}.new"))
        Path(f"{built}.new").rename(built)
    shutil.copyfile(built, out)
    return release


def _modules_tar(deb: Path, release: str, wanted: tuple[str, ...], out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sh("dpkg-deb", "-x", deb, tmp)
        tree = Path(tmp) / "lib" / "modules" / release
        by_name = {p.name.removesuffix(".ko").replace("-", "_"): p
                   for p in tree.rglob("*.ko")}
        order: list[str] = []

        def add(name: str) -> None:
            if name in order or name not in by_name:  # not a module: built in
                return
            # the .modinfo section's "depends=a,b" (what modinfo -F depends prints)
            info = by_name[name].read_bytes().split(b"\0depends=", 1)[1]
            for dep in filter(None, info.split(b"\0", 1)[0].decode().split(",")):
                add(dep.replace("-", "_"))
            order.append(name)

        for name in wanted:
            if name not in by_name:
                raise ValueError(f"{deb.name}: no module {name}")
            add(name)
        stage = Path(tmp) / "stage"
        stage.mkdir()
        for name in order:
            shutil.copyfile(by_name[name], stage / by_name[name].name)
        (stage / "order").write_text("".join(by_name[n].name + "\n" for n in order))
        sh("tar", "-C", stage, "-cf", out, ".")


def early_command(base_url: str) -> str:
    """The test's preseed/early_command: fetch the guest half and start it in the
    background (its output goes nowhere, so the installer does not wait for it)."""
    return (f"wget -q -O /tmp/fleet-standin.sh {base_url}/standin_guest.sh; "
            f"sh /tmp/fleet-standin.sh {base_url} </dev/null >/dev/null 2>&1 &")


def new_uuid() -> str:
    return str(uuid.uuid4())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", default="http://deb.debian.org/debian")
    ap.add_argument("--cache", type=Path,
                    default=Path.home() / ".cache" / "fleet-vm-mirror" / "standin")
    ap.add_argument("--wheels", type=Path, required=True, help="the lab's Salt wheelhouse")
    ap.add_argument("--salt", required=True, help="the Salt version to install from it")
    args = ap.parse_args()
    tar = base_tarball(args.cache, args.mirror, args.cache / "debootstrap.log", args.wheels,
                       args.salt)
    print(tar, shutil.disk_usage(tar.parent).free // 2**30, "GiB free")


if __name__ == "__main__":
    main()
