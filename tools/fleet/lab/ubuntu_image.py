"""The Ubuntu 24.04 minion image: the lab's default OS (`fleet lab up` builds it).

    python -m fleet.lab.ubuntu_image [--mirror URL] [--work DIR]

debootstrap noble (minbase) from the Ubuntu archive (``FLEET_LAB_UBUNTU_MIRROR``, default
http://archive.ubuntu.com/ubuntu) with the archive keyring that check-packages uses
(the machine's, or Debian's ubuntu-keyring package), and Debian 12's debootstrap told to
use its ``gutsy`` script (it has none for noble). Salt is the version the site pins
(``site.salt.version``): noble's Python is 3.12, and Salt's dependency timelib has no
wheel, so the root's own pip (3.12) installs it, building timelib with gcc and python3-dev,
which are removed again; it uses the host's CA bundle for that step only (the host
trusts one more CA than a fresh system), never left in the image. The apt sources are
the ones base.apt renders (noble, -updates, -backports, -security; main restricted
universe multiverse). The image is tagged
``fleet-lab-minion-ubuntu-24.04:<hash of the inputs>``, so the Debian image (and a running
Debian lab) is never touched; an unreachable archive stops the build with a message that
names ``LAB_OS=debian-12``.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from fleet.apt.archive import ArchiveError, keyring
from fleet.cliparts import add_force
from fleet.lab import image as debian_image
from fleet.lab import podman as pm
from fleet.lab.paths import IMAGE, Paths
from fleet.lab.run import LabError, run

log = logging.getLogger("fleet.lab")

OS_NAME = "ubuntu-24.04"
SUITE = "noble"
TAG = f"{IMAGE}-{OS_NAME}"
DEFAULT_MIRROR = "http://archive.ubuntu.com/ubuntu"
COMPONENTS = ["main", "restricted", "universe", "multiverse"]
# the Debian image's list with Ubuntu's kernel package
# (initramfs-tools: a server install has it, and Debian's kernel package depends on it,
# but Ubuntu's only recommends it: without it `update-initramfs` does not exist)
PACKAGES = [p for p in debian_image.PACKAGES if p != "linux-image-amd64"] + [
    "linux-image-generic", "initramfs-tools"]
BUILD_DEPS = ["gcc", "libc6-dev", "python3-dev"]
CHROOT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C"}


def work_dir(paths: Paths) -> Path:
    """Where the root is built (git-ignored; kept by `make lab-down`)."""
    return paths.repo / ".lab-images" / OS_NAME


def mirror() -> str:
    return os.environ.get("FLEET_LAB_UBUNTU_MIRROR", DEFAULT_MIRROR).rstrip("/")


def probe(url: str) -> None:
    """The archive answers, or the build stops naming the Debian lab."""
    release = f"{url}/dists/{SUITE}/Release"
    proc = subprocess.run(["curl", "-fsS", "-o", "/dev/null", "--max-time", "30", release],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise LabError(f"the Ubuntu archive does not answer ({release}: "
                       f"{proc.stderr.strip()}): the Ubuntu 24.04 lab image cannot be built. "
                       "Set FLEET_LAB_UBUNTU_MIRROR to a reachable mirror, or run the "
                       "Debian 12 lab: make lab LAB_OS=debian-12")


def sources(url: str, ring: str) -> str:
    return (f"Types: deb\nURIs: {url}\nSuites: {SUITE} {SUITE}-updates {SUITE}-backports\n"
            f"Components: {' '.join(COMPONENTS)}\nSigned-By: {ring}\n\n"
            f"Types: deb\nURIs: {url}\nSuites: {SUITE}-security\n"
            f"Components: {' '.join(COMPONENTS)}\nSigned-By: {ring}\n")


def input_hash(version: str, url: str, constraints: bytes) -> str:
    h = hashlib.sha256()
    h.update(Path(__file__).read_bytes())
    h.update(" ".join(PACKAGES).encode())
    h.update(f"{url} {version}".encode())
    h.update(constraints)
    return h.hexdigest()[:16]


def build(paths: Paths, work: Path, *, force: bool = False) -> debian_image.ImageResult:
    t0 = time.monotonic()
    url = mirror()
    probe(url)
    try:
        ring = keyring("ubuntu", paths.repo / ".cache" / "packages")
    except ArchiveError as exc:
        raise LabError(f"{exc}; or run the Debian 12 lab: make lab LAB_OS=debian-12") from None
    version = debian_image.salt_pin(paths)
    constraints = (paths.repo / "requirements.txt").read_bytes()
    tag = f"{TAG}:{input_hash(version, url, constraints)}"
    if not force and pm.exists(paths, "image", tag):
        return debian_image.ImageResult(tag, False, time.monotonic() - t0)
    rootfs = work / "rootfs"
    debian_image.fresh_root(rootfs)
    _bootstrap(rootfs, url, ring)
    run(["chroot", rootfs, "apt-get", "install", "-y", "-q", "--no-install-recommends",
         *BUILD_DEPS], env=CHROOT_ENV, timeout=1800)
    run(["chroot", rootfs, "python3", "-m", "venv", "/opt/salt"], timeout=600)
    _install_salt(paths, rootfs, version)
    run(["chroot", rootfs, "apt-get", "purge", "-y", "-q", "--auto-remove", *BUILD_DEPS],
        env=CHROOT_ENV, timeout=1800)
    run(["chroot", rootfs, "apt-get", "clean"], timeout=600)
    debian_image._configure(rootfs)
    debian_image.import_root(paths, rootfs, tag)
    return debian_image.ImageResult(tag, True, time.monotonic() - t0)


def _bootstrap(rootfs: Path, url: str, ring: Path) -> None:
    """debootstrap noble, then the apt sources base.apt renders, and ``apt-get update``."""
    log.info("debootstrap %s from %s", SUITE, url)
    run(["debootstrap", "--variant=minbase", f"--keyring={ring}",
         f"--components={','.join(COMPONENTS)}", f"--include={','.join(PACKAGES)}",
         SUITE, rootfs, url, "/usr/share/debootstrap/scripts/gutsy"], timeout=1800)
    (rootfs / "etc" / "apt" / "sources.list").write_text("")
    keydir = rootfs / "usr" / "share" / "keyrings"
    keydir.mkdir(parents=True, exist_ok=True)
    if not (keydir / "ubuntu-archive-keyring.gpg").exists():
        shutil.copy(ring, keydir / "ubuntu-archive-keyring.gpg")
    (rootfs / "etc" / "apt" / "sources.list.d" / "ubuntu.sources").write_text(
        sources(url, "/usr/share/keyrings/ubuntu-archive-keyring.gpg"))
    run(["chroot", rootfs, "apt-get", "update", "-q"], env=CHROOT_ENV, timeout=1800)


def _install_salt(paths: Paths, rootfs: Path, version: str) -> None:
    """Salt ``version`` into /opt/salt by the root's own pip, under the site's constraints."""
    # pip in the root runs on the host's network, which trusts one more CA than a fresh
    # system: the host's bundle, for this build only (removed below, never in the image)
    cert = rootfs / "tmp" / "host-ca.crt"
    shutil.copy("/etc/ssl/certs/ca-certificates.crt", cert)
    # this host's pip settings (find-links, CA paths) name host paths: replaced here
    pip_env = {"PIP_FIND_LINKS": "", "PIP_CERT": "/tmp/host-ca.crt",
               "SSL_CERT_FILE": "/tmp/host-ca.crt", "REQUESTS_CA_BUNDLE": "/tmp/host-ca.crt"}
    # the versions of Salt's dependencies that the master and the tests run
    shutil.copy(paths.repo / "requirements.txt", rootfs / "tmp" / "fleet-constraints.txt")
    try:
        run(["chroot", rootfs, "/opt/salt/bin/pip", "install", "--quiet",
             "--disable-pip-version-check", "--no-cache-dir",
             "-c", "/tmp/fleet-constraints.txt", f"salt=={version}"],
            env=pip_env, timeout=3600)
    except LabError as exc:
        raise LabError(f"Salt {version} (site.salt.version) does not install for noble's "
                       f"Python 3.12 from the package index: {exc}") from None
    finally:
        cert.unlink(missing_ok=True)
        (rootfs / "tmp" / "fleet-constraints.txt").unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fleet.lab.ubuntu_image",
                                     description="build the Ubuntu 24.04 lab minion image")
    parser.add_argument("--work", type=Path, default=None,
                        help="build directory (default: .lab-images/ubuntu-24.04)")
    add_force(parser, "ubuntu_image")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    paths = Paths.find()
    work = args.work or work_dir(paths)
    try:
        result = build(paths, work, force=args.force)
    except LabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{result.tag}: {'built' if result.built else 'cached'} in {result.seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
