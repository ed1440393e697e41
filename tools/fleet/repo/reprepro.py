"""The repository itself, kept by reprepro: the published tree (``dists/``, ``pool/``,
``fleet-site.asc``) in the repository's directory, reprepro's configuration and database
in its ``.reprepro/`` (the web server serves no dot-path)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from fleet.apt.facts import deb822
from fleet.repo import signing

STATE = ".reprepro"
KEY_FILE = "fleet-site.asc"
ORIGIN, LABEL = "fleet", "fleet-site"
TIMEOUT = 1800


class RepoError(Exception):
    pass


def distributions(codenames: list[str], fingerprint: str) -> str:
    return "\n".join(
        f"Origin: {ORIGIN}\nLabel: {LABEL}\nCodename: {c}\nArchitectures: amd64\n"
        "Components: main\nDescription: the site's pinned and held packages (fleet repo fill)\n"
        f"SignWith: {fingerprint}\n" for c in codenames)


def _run(repo: Path, gnupghome: Path, *args: str) -> str:
    with signing.short(gnupghome) as home:
        proc = subprocess.run(["reprepro", "--silent", "--basedir", str(repo / STATE),
                               "--outdir", str(repo), "--gnupghome", str(home), *args],
                              capture_output=True, text=True, timeout=TIMEOUT, check=False)
    if proc.returncode != 0:
        raise RepoError(f"reprepro {' '.join(args[:2])}: {proc.stderr.strip()[-800:]}")
    return proc.stdout


def init(repo: Path, gnupghome: Path, codename: str, fingerprint: str) -> None:
    """The configuration for ``codename`` (kept with any other codename already there)."""
    conf = repo / STATE / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    dist = conf / "distributions"
    have = [s["Codename"] for s in deb822(dist.read_text())] if dist.exists() else []
    text = distributions(sorted({*have, codename}), fingerprint)
    if not dist.exists() or dist.read_text() != text:
        dist.write_text(text)
        if have:
            _run(repo, gnupghome, "export")


def listed(repo: Path, gnupghome: Path, codename: str) -> dict[str, str]:
    """name -> version of what the repository holds for ``codename``."""
    if not (repo / STATE / "db").exists():
        return {}
    out = _run(repo, gnupghome, "list", codename)
    got = {}
    for line in out.splitlines():
        # "noble|main|amd64: name version"
        _, _, rest = line.partition(": ")
        name, _, version = rest.partition(" ")
        if name:
            got[name] = version
    return got


def include(repo: Path, gnupghome: Path, codename: str, debs: list[Path]) -> None:
    if debs:
        _run(repo, gnupghome, "includedeb", codename, *map(str, debs))


def remove(repo: Path, gnupghome: Path, codename: str, names: list[str]) -> None:
    if names:
        _run(repo, gnupghome, "remove", codename, *names)


def packages_index(repo: Path, codename: str) -> Path:
    return repo / "dists" / codename / "main" / "binary-amd64" / "Packages"


def stand_ins(repo: Path, codename: str, marker: str) -> dict[str, str]:
    """name -> reason of each package of the published index that carries ``marker``."""
    index = packages_index(repo, codename)
    if not index.is_file():
        return {}
    return {s["Package"]: s[marker] for s in deb822(index.read_text()) if marker in s}


def export_key(repo: Path, armored: str) -> None:
    key = repo / KEY_FILE
    if not key.exists() or key.read_text() != armored:
        key.write_text(armored)
