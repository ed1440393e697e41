"""The site package repository's fill against a fake archive served over HTTP by the test
(a real reprepro archive, signed by the test's own key, on loopback), whose index lists
files it does not serve: a hardware-only package becomes a named stand-in where the lab
allows one, any other package is refused by name (the repository left as it was), a file
whose bytes are not the index's sha256 is refused, and once the archive drops a version,
apt still installs it from the site repository, which it trusts by the site's key alone."""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fleet.apt.archive import ArchiveError, OsRelease, ScratchApt
from fleet.apt.facts import NodeFacts, Pin, deb822
from fleet.lab.siterepo import units as lab_units
from fleet.render import bootstrap
from fleet.repo import fill, reprepro, saltsource, signing, standin

SUITE = "noble"
RELEASE = OsRelease("test-noble", "ubuntu", SUITE)
# name -> (source, version, depends)
PACKAGES = {
    # hardware only (its source is a GPU driver's): may be stood in for, in the lab
    "fake-nvidia-utils-999": ("nvidia-graphics-drivers-999-server", "999.1-1",
                              "fake-libnvidia-999 (= 999.1-1), fake-libc"),
    "fake-libnvidia-999": ("nvidia-graphics-drivers-999-server", "999.1-1", "fake-libc"),
    "nvidia-compute-utils-999-server": ("nvidia-graphics-drivers-999-server", "999.1-1", ""),
    # not hardware: never stood in for
    "fake-slurmd": ("fake-slurm", "23.11-1", "fake-libslurm"),
    "fake-libslurm": ("fake-slurm", "23.11-1", "fake-libc"),
    # another source, another version: the archive's, never the repository's
    "fake-libc": ("fake-glibc", "2.39-1", ""),
}
# Salt's repository: salt-minion is what the installer installs, at the version Salt's pin
# names; what it needs from the OS archive stays the archive's
SALT_PACKAGES = {
    "salt-minion": ("salt", "3008.4", "salt-common (= 3008.4)"),
    "salt-common": ("salt", "3008.4", "fake-libc"),
}
HELD = ["fake-nvidia-utils-999", "nvidia-compute-utils-999-server", "fake-slurmd"]

pytestmark = pytest.mark.skipif(shutil.which("reprepro") is None or shutil.which("gpg") is None,
                                reason="reprepro and gpg are missing: make deps installs them "
                                       "(tools/install-host-deps.sh)")


@dataclass
class Archive:
    root: Path  # the published tree (served)
    home: Path  # the archive key's GnuPG home
    url: str
    keyring: Path

    def pool_file(self, name: str) -> Path:
        return next(self.root.glob(f"pool/**/{name}_*.deb"))


def _deb(tmp: Path, name: str, spec: tuple[str, str, str]) -> Path:
    source, version, depends = spec
    root = tmp / "build" / name
    (root / "DEBIAN").mkdir(parents=True)
    (root / "usr" / "share" / name).mkdir(parents=True)
    (root / "usr" / "share" / name / "payload").write_text(f"the real {name}\n")
    control = [f"Package: {name}", f"Source: {source}", f"Version: {version}",
               "Architecture: amd64", "Maintainer: test <t@example.invalid>",
               "Section: misc", "Priority: optional",
               *([f"Depends: {depends}"] if depends else []), f"Description: real {name}"]
    (root / "DEBIAN" / "control").write_text("\n".join(control) + "\n")
    out = tmp / f"{name}.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(root), str(out)],
                   check=True, capture_output=True)
    return out


def _serve(tmp_path: Path, name: str, packages: dict[str, tuple[str, str, str]],
           suite: str) -> Iterator[Archive]:
    """A signed archive of ``packages`` (its own key) served on loopback."""
    store = tmp_path / f"{name}-key"
    store.mkdir()
    signing.ensure(store)
    fpr = signing.fingerprint(store)
    assert fpr
    root = tmp_path / name
    gnupghome = signing.home(store)
    reprepro.init(root, gnupghome, suite, fpr)
    reprepro.include(root, gnupghome, suite,
                     [_deb(tmp_path, n, spec) for n, spec in packages.items()])
    keyring = tmp_path / f"{name}-keyring.gpg"
    keyring.write_bytes(subprocess.run(["gpg", "--homedir", str(gnupghome), "--export", fpr],
                                       check=True, capture_output=True).stdout)
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Archive(root, gnupghome, f"http://127.0.0.1:{server.server_address[1]}",
                      keyring)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def archive(tmp_path: Path) -> Iterator[Archive]:
    """A signed archive of PACKAGES served on loopback for this test."""
    yield from _serve(tmp_path, "archive", PACKAGES, SUITE)


@pytest.fixture
def salt_repo(tmp_path: Path) -> Iterator[Archive]:
    """Salt's own repository (suite ``stable``, its own key), as packages.broadcom.com."""
    yield from _serve(tmp_path, "salt", SALT_PACKAGES, "stable")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def site(tmp_path: Path) -> Path:
    store = tmp_path / "secrets"
    signing.ensure(store)
    return store


def _apt(tmp_path: Path, archive: Archive) -> ScratchApt:
    apt = ScratchApt(tmp_path / "scratch", RELEASE, archive.keyring)
    sources = f"Types: deb\nURIs: {archive.url}\nSuites: {SUITE}\nComponents: main\n"
    apt.write_sources({"/etc/apt/sources.list.d/fleet.sources": sources}, keep_uris=True)
    apt.update()
    return apt


def _nodes() -> list[tuple[str, NodeFacts]]:
    return [("gpu-01", NodeFacts(installs=list(HELD), holds=list(HELD)))]


def _target(tmp_path: Path, site: Path, *, lab: bool) -> fill.Target:
    return fill.Target(tmp_path / "repo", site, SUITE,
                       lab_units(_LabPaths()) if lab else None)


@dataclass
class _LabPaths:
    standins: Path = Path(__file__).resolve().parents[2] / "lab" / "standins.yaml"


def _published(repo: Path) -> dict[str, dict[str, str]]:
    index = reprepro.packages_index(repo, SUITE)
    return {s["Package"]: s for s in deb822(index.read_text())} if index.exists() else {}


def test_fill_holds_the_held_packages_and_what_is_locked_to_them(
        tmp_path: Path, archive: Archive, site: Path) -> None:
    report = fill.fill(_apt(tmp_path, archive), _nodes(), _target(tmp_path, site, lab=False),
                       tmp_path / "incoming")
    held = _published(tmp_path / "repo")
    assert set(held) == set(PACKAGES) - {"fake-libc"}
    assert {e.origin for e in report.entries} == {"archive"}
    assert not any(standin.MARKER in r for r in held.values())
    # signed by the site's key, which apt alone trusts for it: see the last test
    assert (tmp_path / "repo" / "dists" / SUITE / "InRelease").read_text().startswith(
        "-----BEGIN PGP SIGNED MESSAGE-----")
    again = fill.fill(_apt(tmp_path, archive), _nodes(), _target(tmp_path, site, lab=False),
                      tmp_path / "incoming")
    assert {e.origin for e in again.entries} == {"held"}


def test_a_hardware_only_package_the_archive_does_not_serve_becomes_a_stand_in(
        tmp_path: Path, archive: Archive, site: Path) -> None:
    for name in ("fake-nvidia-utils-999", "nvidia-compute-utils-999-server"):
        archive.pool_file(name).unlink()
    report = fill.fill(_apt(tmp_path, archive), _nodes(), _target(tmp_path, site, lab=True),
                       tmp_path / "incoming")
    assert sorted(e.name for e in report.stand_ins) == ["fake-nvidia-utils-999",
                                                        "nvidia-compute-utils-999-server"]
    assert all("HTTP 404" in e.note for e in report.stand_ins)
    held = _published(tmp_path / "repo")
    utils = held["fake-nvidia-utils-999"]
    # the index's name, version, architecture and Depends, and the marker
    assert (utils["Version"], utils["Architecture"]) == ("999.1-1", "amd64")
    assert utils["Depends"] == PACKAGES["fake-nvidia-utils-999"][2]
    assert "HTTP 404" in utils[standin.MARKER]
    assert standin.MARKER not in held["fake-libnvidia-999"]  # served: the real one
    # the unit the states enable is in the stand-in (lab/standins.yaml), inert
    deb = next((tmp_path / "repo").glob("pool/**/nvidia-compute-utils-999-server_*.deb"))
    files = subprocess.run(["dpkg-deb", "-c", str(deb)], check=True, capture_output=True,
                           text=True).stdout
    assert "usr/lib/systemd/system/nvidia-persistenced.service" in files
    assert "payload" not in files
    assert sorted(reprepro.stand_ins(tmp_path / "repo", SUITE, standin.MARKER)) == [
        "fake-nvidia-utils-999", "nvidia-compute-utils-999-server"]


def test_the_site_never_gets_a_stand_in(tmp_path: Path, archive: Archive, site: Path) -> None:
    archive.pool_file("fake-nvidia-utils-999").unlink()
    with pytest.raises(fill.FillError) as err:
        fill.fill(_apt(tmp_path, archive), _nodes(), _target(tmp_path, site, lab=False),
                  tmp_path / "incoming")
    assert "fake-nvidia-utils-999 999.1-1" in str(err.value)
    assert "stand-ins are the lab's only" in str(err.value)
    assert _published(tmp_path / "repo") == {}


def test_a_package_that_is_not_hardware_only_fails_naming_it_and_the_answer(
        tmp_path: Path, archive: Archive, site: Path) -> None:
    archive.pool_file("fake-libslurm").unlink()
    with pytest.raises(fill.FillError) as err:
        fill.fill(_apt(tmp_path, archive), _nodes(), _target(tmp_path, site, lab=True),
                  tmp_path / "incoming")
    msg = str(err.value)
    assert "fake-libslurm 23.11-1" in msg
    assert f"{archive.url}/pool/main/f/fake-slurm/fake-libslurm_23.11-1_amd64.deb" in msg
    assert "HTTP 404" in msg and "not hardware-only" in msg
    # nothing half-built: no package went in
    assert _published(tmp_path / "repo") == {}


def test_a_file_whose_sha256_is_not_the_indexs_is_refused(
        tmp_path: Path, archive: Archive, site: Path) -> None:
    pool = archive.pool_file("fake-slurmd")
    pool.write_bytes(pool.read_bytes() + b"tampered")
    with pytest.raises(fill.FillError) as err:
        fill.fill(_apt(tmp_path, archive), _nodes(), _target(tmp_path, site, lab=True),
                  tmp_path / "incoming")
    msg = str(err.value)
    assert "fake-slurmd 23.11-1" in msg and "sha256" in msg and "refused" in msg
    assert _published(tmp_path / "repo") == {}


def test_after_the_archive_drops_the_version_apt_installs_it_from_the_site_repository(
        tmp_path: Path, archive: Archive, site: Path) -> None:
    fill.fill(_apt(tmp_path, archive), _nodes(), _target(tmp_path, site, lab=False),
              tmp_path / "incoming")
    # the archive drops the pinned version: from its index and its pool
    reprepro.remove(archive.root, archive.home, SUITE, ["fake-slurmd", "fake-libslurm"])
    assert not list(archive.root.glob("pool/**/fake-slurmd_*"))
    # a node: the archive, and the site repository signed by the site's key only
    node = ScratchApt(tmp_path / "node", RELEASE, archive.keyring)
    node.write_sources({"/etc/apt/sources.list.d/fleet.sources":
                        f"Types: deb\nURIs: {archive.url}\nSuites: {SUITE}\n"
                        "Components: main\n"}, keep_uris=True)
    site_key = tmp_path / "fleet-site.asc"
    site_key.write_text(signing.public_key(site))
    parts = node.root / "etc" / "sources.list.d"
    (parts / "fleet-site.sources").write_text(
        f"Types: deb\nURIs: file:{tmp_path / 'repo'}\nSuites: {SUITE}\nComponents: main\n"
        f"Signed-By: {site_key}\n")
    node.update()
    sim = node.simulate(["fake-slurmd"], [], node.root / "etc" / "preferences.d")
    assert sim.returncode == 0, sim.stderr
    assert "Inst fake-slurmd (23.11-1 fleet-site:" in sim.stdout, sim.stdout
    got = node.run("apt-get", "download", "--print-uris", "fake-slurmd=23.11-1")
    assert f"'file:{tmp_path / 'repo'}/pool/" in got.stdout
    # signed by another key, the same repository is refused
    other = tmp_path / "other"
    signing.ensure(other)
    site_key.write_text(signing.public_key(other))
    proc = node.run("apt-get", "update", "-q")
    assert "NO_PUBKEY" in proc.stdout + proc.stderr or "not signed" in proc.stdout + proc.stderr


def test_salt_minion_is_kept_from_salts_own_repository_trusted_by_its_own_key(
        tmp_path: Path, archive: Archive, salt_repo: Archive, site: Path) -> None:
    apt = _apt(tmp_path, archive)
    salt_sources = ("Types: deb\nURIs: http://cache.invalid:3142/HTTPS///salt.invalid/deb\n"
                    "Suites: stable\nComponents: main\n"
                    "Signed-By: /etc/apt/keyrings/salt-archive-keyring.pgp\n")
    assert saltsource.enabled(salt_sources) == salt_sources
    assert saltsource.enabled(salt_sources + "Enabled: no\n") is None
    assert saltsource.upstream("http://cache.invalid:3142/HTTPS///salt.invalid/deb") == (
        "https://salt.invalid/deb")
    # trusted by Salt's key only: the OS archive's key does not open it
    apt.add_source("salt", salt_sources, archive.keyring, salt_repo.url)
    with pytest.raises(ArchiveError):
        apt.update()
    apt.add_source("salt", salt_sources, salt_repo.keyring, salt_repo.url)
    apt.update()
    pin = Pin(bootstrap.PIN, ("salt-*",), "3008.4*", 1001)
    node = NodeFacts(installs=[*HELD, *saltsource.INSTALLS], holds=list(HELD), pins=[pin])
    report = fill.fill(apt, [("gpu-01", node)], _target(tmp_path, site, lab=False),
                       tmp_path / "incoming")
    held = _published(tmp_path / "repo")
    assert held["salt-minion"]["Version"] == "3008.4"
    assert held["salt-common"]["Version"] == "3008.4"
    assert "fake-libc" not in held  # the OS archive's, as before
    assert {"salt-minion", "salt-common"} <= {e.name for e in report.entries}
