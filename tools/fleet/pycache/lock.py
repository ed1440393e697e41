"""What a uv.lock asks for: its registry packages' wheels (URL, file name, sha256), those
of the wanted platforms only, and the packages that have none of them (a cache filled from
the lock could not install them without building)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from packaging.markers import InvalidMarker, Marker

# the platform tags a Linux x86_64 worker installs (a wheel tagged `any` always fits)
DEFAULT_PLATFORMS = (r"(many)?linux(_\d+_\d+|1|2010|2014)?_x86_64",)
# the environment markers of the nodes the cache serves: Linux x86_64 CPython
_LINUX = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
          "platform_machine": "x86_64", "implementation_name": "cpython",
          "platform_python_implementation": "CPython", "platform_release": "",
          "platform_version": "", "implementation_version": "", "extra": ""}
_ANY_PYTHON = tuple((3, minor) for minor in range(8, 16))  # no ``pythons`` given
# a wheel file name, and each segment of its URL's path: nothing a path or a shell
# could read as more than one word (no '..', no '/', no quote)
_FILE = re.compile(r"^[A-Za-z0-9_.+!-]+\.whl$")
_SEGMENT = re.compile(r"^[A-Za-z0-9_.+!%~-]+$")
_HOST = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
_SHA256 = re.compile(r"^sha256:([0-9a-f]{64})$")


class LockError(ValueError):
    """The lock cannot fill the cache: names the file, the package and what to do."""


@dataclass(frozen=True)
class Wheel:
    package: str  # the lock's package name (PEP 503 normalised)
    version: str
    filename: str
    url: str      # the lock's URL (https)
    sha256: str
    path: str     # its path under the cache's root (site_path)


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def site_path(url: str) -> str:
    """Where the cache keeps the file of an https ``url``: its host, then its path
    (``https://H/P`` -> ``H/P``). Refuses what could leave the cache's root."""
    parts = urlsplit(url)
    segments = parts.path.split("/")[1:]
    if (parts.scheme != "https" or parts.hostname is None or not _HOST.match(parts.hostname)
            or parts.port is not None or parts.query or parts.fragment or parts.username
            or not segments or not _FILE.match(segments[-1])
            or not all(_SEGMENT.match(s) and s not in {".", ".."} for s in segments)):
        raise ValueError(f"{url!r}: not an https URL of a wheel file the cache can hold "
                         "(host, then a path of plain segments ending in NAME.whl)")
    return "/".join([parts.hostname, *segments])


def _fits(filename: str, platforms: Sequence[re.Pattern[str]]) -> bool:
    tags = filename.removesuffix(".whl").split("-")[-1].split(".")
    return any(t == "any" or any(p.fullmatch(t) for p in platforms) for t in tags)


def _runs_on(filename: str, pythons: Sequence[tuple[int, int]]) -> bool:
    """Whether a CPython of ``pythons`` (3, 12) installs the wheel: a py3/py3N tag, its
    own cpXY, or an abi3 wheel of an older cp3N."""
    *_, pytags, abi, _plat = filename.removesuffix(".whl").split("-")
    for major, minor in pythons:
        for tag in pytags.split("."):
            m = re.fullmatch(r"(py|cp)(\d)(\d*)", tag)
            if m is None or int(m[2]) != major:
                continue
            if (m[1] == "py" and m[3] in ("", str(minor))) or m[3] == str(minor) or (
                    m[1] == "cp" and "abi3" in abi.split(".") and m[3]
                    and int(m[3]) <= minor):
                return True
    return False


def _holds(marker: str, python: tuple[int, int]) -> bool:
    """Whether a dependency's marker holds on a Linux x86_64 CPython ``python``; one that
    cannot be read holds (the package is then wanted, and its wheels checked)."""
    major, minor = python
    try:
        return Marker(marker).evaluate({**_LINUX, "python_version": f"{major}.{minor}",
                                        "python_full_version": f"{major}.{minor}.0"})
    except InvalidMarker:
        return True


def _not_on_linux(data: dict[str, Any], pythons: Sequence[tuple[int, int]]) -> set[str]:
    """The packages that every package of the lock requires only under a marker false on
    Linux x86_64 CPython (of ``pythons``): e.g. a Windows-only dependency, which a worker
    never installs and which may have no Linux wheel."""
    markers: dict[str, list[str | None]] = {}
    for pkg in data.get("package", []):
        deps = list(pkg.get("dependencies", []))
        for table in ("optional-dependencies", "dev-dependencies"):
            for group in (pkg.get(table) or {}).values():
                deps += group
        for dep in deps:
            markers.setdefault(normalise(str(dep.get("name", ""))), []).append(
                dep.get("marker"))
    return {name for name, ms in markers.items()
            if all(m is not None and not any(_holds(str(m), py) for py in pythons)
                   for m in ms)}


def _wheel(src: Path, name: str, version: str, entry: dict[str, object]) -> Wheel:
    url, digest = str(entry.get("url", "")), _SHA256.match(str(entry.get("hash", "")))
    if digest is None:
        raise LockError(f"{src}: package {name} {version}: wheel {url} has no sha256 hash; "
                        "the cache takes hash-checked files only (re-lock with uv)")
    try:
        path = site_path(url)
    except ValueError as exc:
        raise LockError(f"{src}: package {name} {version}: {exc}") from None
    return Wheel(normalise(name), version, path.rsplit("/", 1)[1], url, digest[1], path)


def wheels(src: Path, platforms: Sequence[str] = DEFAULT_PLATFORMS,
           pythons: Sequence[tuple[int, int]] = ()) -> list[Wheel]:
    """The wheels of ``src``'s registry packages that fit ``platforms`` (regexes of a
    wheel's platform tag) and, if any are given, one of ``pythons`` (CPython versions). A
    registry package with none (unless the lock requires it only under markers false on
    Linux x86_64 CPython), or one with a source that is neither the registry nor the
    project's own (git, a URL), is an error naming it."""
    try:
        data = tomllib.loads(src.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LockError(f"{src}: cannot read it as a uv.lock: {exc}") from None
    pats = [re.compile(p) for p in platforms]
    elsewhere = _not_on_linux(data, pythons or _ANY_PYTHON)
    out: list[Wheel] = []
    for pkg in data.get("package", []):
        name, version = str(pkg.get("name", "?")), str(pkg.get("version", "?"))
        source = pkg.get("source", {})
        if not isinstance(source, dict) or {"virtual", "editable", "directory"} & set(source):
            continue  # the project itself and its workspace members: no file to cache
        if "registry" not in source:
            raise LockError(f"{src}: package {name} {version} comes from {source}, not a "
                            "package index: the site cache holds index wheels only")
        files = [(str(w.get("url", "")).rsplit("/", 1)[-1], w) for w in pkg.get("wheels", [])]
        fitting = [(f, w) for f, w in files if _fits(f, pats)]
        if not fitting and normalise(name) in elsewhere:
            continue  # required only where its markers exclude Linux: never installed
        if not fitting:
            raise LockError(f"{src}: package {name} {version} has no wheel for "
                            f"{', '.join(platforms)} (an sdist would be built on the worker, "
                            "which needs the internet): pin a version with such a wheel")
        # none for these Pythons: a version the lock holds for other Pythons (markers)
        found = [w for f, w in fitting if not pythons or _runs_on(f, pythons)]
        out += [_wheel(src, name, version, w) for w in found]
    return out
