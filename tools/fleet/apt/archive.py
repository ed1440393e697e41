"""A scratch apt state per OS release: the real archive indexes, none of the machine's apt.

Every apt call gets its own Dir::State (lists, an empty dpkg status: an empty system),
Dir::Cache, sources, preferences and apt.conf parts under the cache directory, so the
machine's own lists, preferences and keys are neither read nor touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fleet.apt.facts import Pin, deb822


class ArchiveError(Exception):
    """The archive (or its keyring) cannot be used: the check cannot be made."""


@dataclass(frozen=True)
class OsRelease:
    name: str  # ubuntu-24.04
    distro: str  # ubuntu | debian
    codename: str


OSES: dict[str, OsRelease] = {
    "ubuntu-24.04": OsRelease("ubuntu-24.04", "ubuntu", "noble"),
    "ubuntu-22.04": OsRelease("ubuntu-22.04", "ubuntu", "jammy"),
    "debian-12": OsRelease("debian-12", "debian", "bookworm"),
}

# the archives (main, security) each distribution's sources point at; the site's URIs
# are apt-cacher-ng in front of these. FLEET_<DISTRO>_MIRROR / _SECURITY_MIRROR override.
ARCHIVES: dict[str, tuple[str, str]] = {
    "ubuntu": ("http://archive.ubuntu.com/ubuntu", "http://security.ubuntu.com/ubuntu"),
    "debian": ("http://deb.debian.org/debian", "http://deb.debian.org/debian-security"),
}
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
UBUNTU_KEYRING = Path("/usr/share/keyrings/ubuntu-archive-keyring.gpg")
TIMEOUT = 600
# base.apt's list of the OS archive (the other lists the states write, Salt's repository,
# are reported as not checked)
ARCHIVE_SOURCES = "fleet.sources"


def mirrors(distro: str) -> tuple[str, str]:
    main, security = ARCHIVES[distro]
    return (os.environ.get(f"FLEET_{distro.upper()}_MIRROR", main),
            os.environ.get(f"FLEET_{distro.upper()}_SECURITY_MIRROR", security))


class ScratchApt:
    def __init__(self, root: Path, release: OsRelease, keyring: Path) -> None:
        self.root = root
        self.release = release
        self.keyring = keyring
        for d in ("state/lists/partial", "cache/archives/partial", "etc/sources.list.d",
                  "etc/preferences.d", "etc/apt.conf.d", "etc/trusted.gpg.d"):
            (root / d).mkdir(parents=True, exist_ok=True)
        (root / "state" / "status").touch()
        self.sources_text = ""

    def config(self, preferences: Path | None = None) -> Path:
        """An apt.conf naming only scratch paths (given as APT_CONFIG, with Dir::Etc::main
        and Dir::Etc::Parts of its own, so the machine's apt configuration is never read)."""
        r = self.root
        prefs = preferences or r / "etc" / "preferences.d"
        opts: dict[str, object] = {
            "Dir::Etc::main": "/dev/null", "Dir::Etc::Parts": r / "etc" / "apt.conf.d",
            "Dir::State": r / "state", "Dir::State::status": r / "state" / "status",
            "Dir::Cache": r / "cache",
            "Dir::Cache::pkgcache": r / "cache" / "pkgcache.bin",
            "Dir::Cache::srcpkgcache": r / "cache" / "srcpkgcache.bin",
            "Dir::Etc::SourceList": "/dev/null",
            "Dir::Etc::SourceParts": r / "etc" / "sources.list.d",
            "Dir::Etc::Preferences": "/dev/null", "Dir::Etc::PreferencesParts": prefs,
            "Dir::Etc::Trusted": "/dev/null", "Dir::Etc::TrustedParts": r / "etc" / "trusted.gpg.d",
            "APT::Architecture": "amd64", "Acquire::Languages": "none",
            "APT::Sandbox::User": "root", "Debug::NoLocking": "1", "Acquire::Retries": "2",
            "Acquire::http::Timeout": "30", "APT::Install-Recommends": "true",
            "Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled": "false",
        }
        lines = [f'{key} "{value}";' for key, value in opts.items()]
        lines.append('APT::Architectures { "amd64"; };')
        conf = r / ("apt.conf" if preferences is None else f"apt-{preferences.name}.conf")
        conf.write_text("\n".join(lines) + "\n")
        return conf

    def write_sources(self, sources: dict[str, str], *, keep_uris: bool = False) -> list[str]:
        """The node's rendered sources with the archives' URIs (``keep_uris``: their own,
        e.g. the site's apt cache) and a local keyring. Returns what was mapped, for the
        report."""
        main, security = mirrors(self.release.distro)
        parts = self.root / "etc" / "sources.list.d"
        for old in parts.iterdir():
            old.unlink()
        notes = []
        text = []
        for file, content in sorted(sources.items()):
            if Path(file).name != ARCHIVE_SOURCES:
                uris = " ".join(st.get("URIs", "") for st in deb822(content))
                notes.append(f"{Path(file).name}: not checked ({uris}: only the OS archive "
                             "is; its packages are outside this check)")
                continue
            for stanza in deb822(content):
                if stanza.get("Enabled", "yes").lower() == "no":
                    continue
                uri = stanza.get("URIs", "")
                target = uri if keep_uris else security if "security" in uri else main
                stanza = {**stanza, "URIs": target, "Signed-By": str(self.keyring)}
                text.append("\n".join(f"{k}: {v}" for k, v in stanza.items()))
                notes.append(f"{Path(file).name}: {uri} -> {target} "
                             f"({stanza.get('Suites')}; {stanza.get('Components')})")
        self.sources_text = "\n\n".join(text) + "\n"
        (parts / "fleet.sources").write_text(self.sources_text)
        return notes

    def add_source(self, name: str, content: str, keyring: Path, uri: str | None = None) -> None:
        """Another repository's deb822 source (Salt's), trusted by its own ``keyring``, at
        its own URI or ``uri``; after ``write_sources``, which removes it."""
        stanzas = [{**st, "Signed-By": str(keyring), **({"URIs": uri} if uri else {})}
                   for st in deb822(content) if st.get("Enabled", "yes").lower() != "no"]
        text = "\n\n".join("\n".join(f"{k}: {v}" for k, v in st.items()) for st in stanzas)
        (self.root / "etc" / "sources.list.d" / f"{name}.sources").write_text(text + "\n")

    def run(self, tool: str, *args: str, preferences: Path | None = None,
            timeout: int = TIMEOUT) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "LC_ALL": "C", "DEBIAN_FRONTEND": "noninteractive",
               "APT_CONFIG": str(self.config(preferences))}
        try:
            return subprocess.run([tool, *args], capture_output=True,
                                  text=True, timeout=timeout, env=env, check=False)
        except subprocess.TimeoutExpired:
            raise ArchiveError(f"{self.release.name}: {tool} {args[0]} took over {timeout} s "
                               f"(is the archive reachable?)") from None

    def update(self) -> None:
        proc = self.run("apt-get", "update", "-q")
        errors = [line for line in (proc.stdout + proc.stderr).splitlines()
                  if line.startswith(("Err:", "E:")) or "Failed to fetch" in line]
        if proc.returncode != 0 or errors:
            mirror, security = mirrors(self.release.distro)
            raise ArchiveError(
                f"{self.release.name}: the archive did not answer ({mirror}, {security}): "
                + "; ".join(errors[:4] or [proc.stderr.strip()[-300:]])
                + f" -- nothing was checked for {self.release.name}; set "
                f"FLEET_{self.release.distro.upper()}_MIRROR to a reachable mirror")

    def show(self, names: list[str], preferences: Path) -> str:
        return self.run("apt-cache", "show", "--no-all-versions", *names,
                        preferences=preferences).stdout

    def simulate(self, installs: list[str], removes: list[str],
                 preferences: Path) -> subprocess.CompletedProcess[str]:
        return self.run("apt-get", "-s", "-q", "install", *installs,
                        *[f"{r}-" for r in removes], preferences=preferences)

    def preferences(self, node: str, pins: list[Pin]) -> Path:
        d = self.root / "prefs" / node
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        for i, pin in enumerate(pins):
            (d / f"{i:02d}-{Path(pin.file).name.replace('.', '-')}").write_text(pin.text())
        return d


def keyring(distro: str, cache: Path) -> Path:
    """The archive keyring of ``distro``: the machine's, or for Ubuntu, Debian's
    ubuntu-keyring package (bookworm-backports, verified by Debian's keyring) unpacked."""
    if distro == "debian":
        if not DEBIAN_KEYRING.is_file():
            raise ArchiveError(f"{DEBIAN_KEYRING} is missing: apt-get install "
                               "debian-archive-keyring")
        return DEBIAN_KEYRING
    if UBUNTU_KEYRING.is_file():
        return UBUNTU_KEYRING
    ring = cache / "keyrings" / "ubuntu-archive-keyring.gpg"
    if ring.is_file():
        return ring
    bootstrap = ScratchApt(cache / "keyring-bootstrap", OSES["debian-12"], keyring("debian", cache))
    main, _ = mirrors("debian")
    (bootstrap.root / "etc" / "sources.list.d" / "bpo.sources").write_text(
        f"Types: deb\nURIs: {main}\nSuites: bookworm-backports\nComponents: main\n"
        f"Signed-By: {DEBIAN_KEYRING}\n")
    bootstrap.update()
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        proc = subprocess.run(["apt-get", "download", "ubuntu-keyring"], cwd=tmp,
                              capture_output=True, text=True, timeout=TIMEOUT, check=False,
                              env={**os.environ, "APT_CONFIG": str(bootstrap.config())})
        debs = list(Path(tmp).glob("ubuntu-keyring_*.deb"))
        if proc.returncode != 0 or not debs:
            raise ArchiveError(f"could not fetch Debian's ubuntu-keyring package: "
                               f"{proc.stderr.strip()[-300:]}")
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(Path(tmp) / "x")], check=True,
                       timeout=60)
        ring.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(tmp) / "x" / "usr/share/keyrings/ubuntu-archive-keyring.gpg", ring)
    return ring
