"""The minion image: Debian 12 minbase + systemd + dbus + Salt in /opt/salt from a
wheelhouse built on this host (pip cannot reach the index from containers).

Built with debootstrap and ``podman import`` (no registry is reachable). The tag is a
hash of every input (this file, the package list, the mirror, the Salt pin and the
wheel names), so an unchanged input reuses the image and any change rebuilds it."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from fleet.inventory.load import load_inventory
from fleet.lab import podman as pm
from fleet.lab.paths import IMAGE, Paths
from fleet.lab.run import LabError, run

log = logging.getLogger("fleet.lab")

SUITE = "bookworm"
# systemd as PID 1; python3 for Salt's venv; the rest is what the autoinstall's
# minimal server has and the states take for granted (ip, ps, curl for the tests).
# A real node has its kernel installed before Salt first runs (base.apt only holds it):
# so does the image, built once, instead of six nodes installing it in the highstate.
PACKAGES = ["systemd", "systemd-sysv", "dbus", "python3", "python3-venv", "python3-yaml",
            "ca-certificates", "iproute2", "procps", "curl", "apt-utils", "gnupg",
            "kmod", "udev", "less", "linux-image-amd64"]

SALT_UNIT = """\
[Unit]
Description=The Salt {what} (fleet lab image: Salt from a venv in /opt/salt)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=/opt/salt/bin/salt-{what}
KillMode=process
LimitNOFILE=65536
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""


@dataclass(frozen=True)
class ImageResult:
    tag: str
    built: bool
    seconds: float


def debian_mirror() -> str:
    """The mirror this host's apt uses (deb822 or one-line format)."""
    for f in [Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")]:
        if f.exists():
            m = re.search(r"(?m)^(?:URIs:|deb)\s+(?:\[[^\]]*\]\s+)?(https?://\S+/debian)/?\s",
                          f.read_text() + "\n")
            if m:
                return m.group(1)
    return "http://deb.debian.org/debian"


def salt_pin(paths: Paths) -> str:
    """The Salt the site pins (``site.salt.version``, read through the loader with the lab's
    overlays): the lab's minions run what the nodes run (requirements.txt pins the same
    one for the master and the tests, checked by tests/unit/test_salt_pin.py)."""
    return load_inventory(paths.inventory, paths.overlays).raw.site.salt.version


def wheelhouse(paths: Paths, version: str) -> Path:
    """``pip wheel`` Salt and its dependencies (constrained by requirements.txt) once."""
    d = paths.lab / "wheelhouse" / version
    stamp = d / ".complete"
    if stamp.exists():
        return d
    d.mkdir(parents=True, exist_ok=True)
    log.info("building the Salt %s wheelhouse in %s", version, d)
    run([paths.venv_bin / "pip", "wheel", "--quiet", "--disable-pip-version-check",
         "-w", d, "-c", paths.repo / "requirements.txt", f"salt=={version}"], timeout=1800)
    stamp.touch()
    return d


def input_hash(paths: Paths, wheels: Path, mirror: str) -> str:
    h = hashlib.sha256()
    h.update(Path(__file__).read_bytes())
    h.update(" ".join(PACKAGES).encode())
    h.update(mirror.encode())
    for w in sorted(p.name for p in wheels.glob("*.whl")):
        h.update(w.encode())
    return h.hexdigest()[:16]


def build(paths: Paths, *, force: bool = False) -> ImageResult:
    t0 = time.monotonic()
    version = salt_pin(paths)
    wheels = wheelhouse(paths, version)
    mirror = debian_mirror()
    tag = f"{IMAGE}:{input_hash(paths, wheels, mirror)}"
    if not force and pm.exists(paths, "image", tag):
        return ImageResult(tag, False, time.monotonic() - t0)
    rootfs = paths.image_dir / "rootfs"
    fresh_root(rootfs)
    log.info("debootstrap %s from %s", SUITE, mirror)
    run(["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE,
         rootfs, mirror], timeout=1800)
    dst = rootfs / "tmp" / "wheels"
    shutil.copytree(wheels, dst)
    run(["chroot", rootfs, "python3", "-m", "venv", "/opt/salt"], timeout=600)
    run(["chroot", rootfs, "/opt/salt/bin/pip", "install", "--quiet", "--no-index",
         "--disable-pip-version-check", "--find-links", "/tmp/wheels", f"salt=={version}"],
        timeout=1800)
    shutil.rmtree(dst)
    _configure(rootfs)
    import_root(paths, rootfs, tag)
    return ImageResult(tag, True, time.monotonic() - t0)


def fresh_root(rootfs: Path) -> None:
    """An empty place for a new root file system: what an interrupted build left goes."""
    if rootfs.exists():
        shutil.rmtree(rootfs)
    rootfs.parent.mkdir(parents=True, exist_ok=True)


def import_root(paths: Paths, rootfs: Path, tag: str) -> None:
    """``podman import`` of ``rootfs`` as ``tag`` (systemd as its command); then the root is
    removed and the older images of the tag's repository pruned."""
    log.info("importing %s", tag)
    tar = run(["tar", "-C", rootfs, "-c", "."], text=False, timeout=600).stdout
    conf = pm.ensure_conf(paths)
    # the tar stream is bytes: run()'s text wrapper does not apply here
    # the caller's environment: CONTAINERS_STORAGE_CONF (make test's own storage) names
    # where every other podman call of the lab looks for this image
    proc = subprocess.run(["podman", "import", "--change", 'CMD ["/sbin/init"]', "-", tag],
                          input=tar, capture_output=True, check=False,
                          env={**os.environ, "CONTAINERS_CONF": str(conf)})
    if proc.returncode != 0:
        raise LabError(f"podman import {tag} failed: {proc.stderr.decode()[-2000:]}")
    shutil.rmtree(rootfs)
    prune(paths, keep=tag)


def prune(paths: Paths, keep: str) -> None:
    """Remove the images of older inputs of ``keep``'s repository (one still used by a
    container stays)."""
    out = pm.podman(paths, "images", "--format", "{{.Repository}}:{{.Tag}}",
                    "--filter", f"reference={keep.rsplit(':', 1)[0]}", check=False).stdout
    for old in out.split():
        if old != keep:
            pm.podman(paths, "rmi", old, check=False)


def _configure(rootfs: Path) -> None:
    etc = rootfs / "etc"
    for what in ("minion", "master"):
        (etc / "systemd" / "system" / f"salt-{what}.service").write_text(
            SALT_UNIT.format(what=what))
    wants = etc / "systemd" / "system" / "multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    link = wants / "salt-minion.service"
    if not link.is_symlink():
        link.symlink_to("/etc/systemd/system/salt-minion.service")
    for tool in ("salt-call", "salt-minion", "salt-master", "salt-key", "salt"):
        target = rootfs / "usr" / "bin" / tool
        if not target.is_symlink():
            target.symlink_to(f"/opt/salt/bin/{tool}")
    (etc / "salt" / "minion.d").mkdir(parents=True, exist_ok=True)
    (etc / "salt" / "pki" / "minion").mkdir(parents=True, exist_ok=True)
    # a container gets its identity from podman: no baked hostname or machine-id
    (etc / "machine-id").write_text("")
    (etc / "hostname").unlink(missing_ok=True)
    # a container never boots its own initramfs: packages that trigger update-initramfs
    # (the kernel, udev, firmware, nvidia.driver's nouveau blacklist) must not spend
    # minutes rebuilding it on every node. `update-initramfs -u` then says
    # "Not updating initramfs." and succeeds.
    conf = etc / "initramfs-tools" / "update-initramfs.conf"
    text = conf.read_text() if conf.exists() else ""
    text = re.sub(r"(?m)^update_initramfs=.*$", "", text).rstrip() + "\n"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(text + "# fleet lab image: a container never boots this initramfs\n"
                    "update_initramfs=no\n")
    for initrd in (rootfs / "boot").glob("initrd.img-*"):
        initrd.unlink()
    # apt inside the container: keep downloaded packages out of the image, no recommends
    (etc / "apt" / "apt.conf.d" / "90fleet-lab").write_text(
        'APT::Install-Recommends "false";\n')
