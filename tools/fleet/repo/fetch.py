"""The files of the wanted packages, each checked against the archive's signed index.

apt (in its scratch state, fleet.apt.archive) has verified the archive's InRelease
signature and each index's checksum; ``apt-get download --print-uris`` then names every
file's URL and the sha256 that index gives it. A file is kept only when its bytes have
that sha256; anything else is refused, naming the package and what the archive answered.
"""

from __future__ import annotations

import hashlib
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fleet.apt.archive import ScratchApt

CHUNK = 1 << 20
TIMEOUT = 120
# apt prints the strongest hash it knows (SHA512); the sha256 is the index record's
URI_LINE = re.compile(r"^'(?P<url>[^']+)' (?P<file>\S+) (?P<size>\d+) \S+$")


class FetchError(Exception):
    """A wanted file cannot be had from the archive (the message names it and why)."""


@dataclass(frozen=True)
class Wanted:
    name: str
    version: str
    url: str
    file: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Missing:
    """The index lists the file, but the archive does not serve it."""

    wanted: Wanted
    answer: str  # "HTTP 404 Not Found", "connection refused", ...


def uris(apt: ScratchApt, versions: dict[str, str], recs: Mapping[str, Mapping[str, str]],
         preferences: Path) -> list[Wanted]:
    """Each ``name=version``'s URL and file name (apt's), size and sha256 (its index
    record in ``recs``)."""
    if not versions:
        return []
    proc = apt.run("apt-get", "download", "--print-uris", "-q",
                   *[f"{n}={v}" for n, v in versions.items()], preferences=preferences)
    found: dict[str, Wanted] = {}
    for line in proc.stdout.splitlines():
        m = URI_LINE.match(line.strip())
        if not m:
            continue
        name = m["file"].split("_", 1)[0]
        sha = recs.get(name, {}).get("SHA256", "")
        if name in versions and re.fullmatch(r"[0-9a-f]{64}", sha):
            found[name] = Wanted(name, versions[name], m["url"], m["file"], int(m["size"]), sha)
    lost = [f"{n}={v}" for n, v in versions.items() if n not in found]
    if proc.returncode != 0 or lost:
        raise FetchError("the archive's index names no file (or no sha256) for "
                         + ", ".join(lost or list(versions)) + ": "
                         + (proc.stderr.strip()[-400:] or "no URI printed"))
    return [found[n] for n in versions]


def download(want: Wanted, dest_dir: Path) -> Path | Missing:
    """The file in ``dest_dir`` with its indexed sha256, or :class:`Missing` when the
    archive does not serve it; a file with other bytes raises :class:`FetchError`."""
    dest = dest_dir / want.file
    if dest.is_file() and sha256_of(dest) == want.sha256:
        return dest
    part = dest.with_name(dest.name + ".part")
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(want.url, timeout=TIMEOUT) as resp, part.open("wb") as out:
            while chunk := resp.read(CHUNK):
                digest.update(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as exc:
        part.unlink(missing_ok=True)
        return Missing(want, f"HTTP {exc.code} {exc.reason}")
    except (urllib.error.URLError, OSError) as exc:
        part.unlink(missing_ok=True)
        reason = getattr(exc, "reason", exc)
        raise FetchError(f"{want.name} {want.version}: {want.url}: {reason}") from None
    if digest.hexdigest() != want.sha256:
        part.unlink(missing_ok=True)
        raise FetchError(f"{want.name} {want.version}: {want.url} answered bytes with sha256 "
                         f"{digest.hexdigest()}, but the archive's signed index says "
                         f"{want.sha256}: refused")
    part.rename(dest)
    return dest



def sha256_of(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
