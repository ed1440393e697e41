"""fleet.pycache: what a uv.lock puts into the site's Python package cache (its registry
wheels of the wanted platforms, each checked against the lock's sha256), the refusals
that name the package, and the cache's files and PEP 503 pages. Wheels here are small
files written by the test (a cache only compares bytes with sha256s; nothing installs
them), filled with --from a local wheelhouse."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fleet.exitcodes import Exit
from fleet.pycache import lock, store
from support import harness

PYPI = "https://files.pythonhosted.org/packages"


def _wheel(house: Path, name: str, body: bytes) -> str:
    house.mkdir(parents=True, exist_ok=True)
    (house / name).write_bytes(body)
    return hashlib.sha256(body).hexdigest()


def _lock(path: Path, packages: list[str]) -> Path:
    path.write_text('version = 1\nrevision = 3\nrequires-python = ">=3.11"\n\n'
                    '[[package]]\nname = "job"\nversion = "0.1.0"\n'
                    'source = { virtual = "." }\n\n' + "\n".join(packages))
    return path


def _pkg(name: str, wheels: list[tuple[str, str]], sdist_only: bool = False) -> str:
    rows = "".join(f'    {{ url = "{PYPI}/ab/cd/{"e" * 60}/{f}", hash = "sha256:{h}" }},\n'
                   for f, h in wheels)
    text = (f'[[package]]\nname = "{name}"\nversion = "1.0"\n'
            'source = { registry = "https://pypi.org/simple" }\n'
            f'sdist = {{ url = "{PYPI}/x/{name}-1.0.tar.gz", hash = "sha256:{"0" * 64}" }}\n')
    return text + ("" if sdist_only else f"wheels = [\n{rows}]\n")


@pytest.fixture
def house(tmp_path: Path) -> Path:
    return tmp_path / "house"


def test_a_lock_gives_its_linux_x86_64_and_pure_wheels(tmp_path: Path, house: Path) -> None:
    pure = _wheel(house, "Attr_s-1.0-py3-none-any.whl", b"pure")
    x86 = _wheel(house, "fast-1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                 b"x86")
    arm = _wheel(house, "fast-1.0-cp312-cp312-manylinux_2_17_aarch64.whl", b"arm")
    mac = _wheel(house, "fast-1.0-cp312-cp312-macosx_11_0_arm64.whl", b"mac")
    src = _lock(tmp_path / "uv.lock", [
        _pkg("Attr_s", [("Attr_s-1.0-py3-none-any.whl", pure)]),
        _pkg("fast", [("fast-1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                       x86), ("fast-1.0-cp312-cp312-manylinux_2_17_aarch64.whl", arm),
                      ("fast-1.0-cp312-cp312-macosx_11_0_arm64.whl", mac)])])
    got = lock.wheels(src)
    assert [(w.package, w.filename) for w in got] == [
        ("attr-s", "Attr_s-1.0-py3-none-any.whl"),
        ("fast", "fast-1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")]
    assert got[0].path == f"files.pythonhosted.org/packages/ab/cd/{'e' * 60}/" \
                          "Attr_s-1.0-py3-none-any.whl"
    assert len(lock.wheels(src, [r"manylinux_2_17_aarch64"])) == 2


@pytest.mark.parametrize(("package", "says"), [
    (_pkg("only-src", [], sdist_only=True), "package only-src 1.0 has no wheel for"),
    (_pkg("nohash", [("nohash-1.0-py3-none-any.whl", "")]).replace('"sha256:"', '""'),
     "has no sha256 hash"),
    ('[[package]]\nname = "gitdep"\nversion = "1.0"\n'
     'source = { git = "https://example.com/x.git?rev=1#abc" }\n', "not a package index"),
    (_pkg("evil", [("evil-1.0-py3-none-any.whl", "a" * 64)]).replace("/ab/cd/", "/../../"),
     "not an https URL of a wheel file"),
    (_pkg("plain", [("plain-1.0-py3-none-any.whl", "a" * 64)]).replace("https://", "http://"),
     "not an https URL of a wheel file"),
])
def test_a_lock_the_cache_cannot_take_is_refused_naming_the_package(
        tmp_path: Path, package: str, says: str) -> None:
    src = _lock(tmp_path / "uv.lock", [package])
    with pytest.raises(lock.LockError, match=says) as exc:
        lock.wheels(src)
    assert str(src) in str(exc.value)


def test_add_writes_checked_files_and_a_pep503_index(tmp_path: Path, house: Path) -> None:
    digest = _wheel(house, "attrs-1.0-py3-none-any.whl", b"attrs")
    src = _lock(tmp_path / "uv.lock", [_pkg("attrs", [("attrs-1.0-py3-none-any.whl", digest)])])
    root = tmp_path / "cache"
    added = store.add(root, lock.wheels(src), house)
    assert [a.fetched for a in added] == [True]
    path = root / added[0].wheel.path
    assert path.read_bytes() == b"attrs" and path.stat().st_mode & 0o777 == 0o644
    page = (root / "simple" / "attrs" / "index.html").read_text()
    assert f'href="../../{added[0].wheel.path}#sha256={digest}"' in page
    assert 'href="attrs/"' in (root / "simple" / "index.html").read_text()
    # a second fill fetches nothing and rewrites nothing
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}
    assert [a.fetched for a in store.add(root, lock.wheels(src), house)] == [False]
    assert before == {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_a_file_that_is_not_the_locks_is_refused_and_not_cached(tmp_path: Path,
                                                                house: Path) -> None:
    _wheel(house, "attrs-1.0-py3-none-any.whl", b"tampered")
    src = _lock(tmp_path / "uv.lock",
                [_pkg("attrs", [("attrs-1.0-py3-none-any.whl", "b" * 64)])])
    root = tmp_path / "cache"
    with pytest.raises(store.StoreError, match=r"the lock says b{64}: not cached"):
        store.add(root, lock.wheels(src), house)
    assert [p for p in root.rglob("*") if p.is_file()] == []


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleet.pycache", *argv],
                          env={**os.environ, "PYTHONPATH": str(harness.ROOT / "tools")},
                          capture_output=True, text=True, timeout=60, check=False)


def test_the_command_reports_in_json_with_its_exit_codes(tmp_path: Path, house: Path) -> None:
    digest = _wheel(house, "attrs-1.0-py3-none-any.whl", b"attrs")
    good = _lock(tmp_path / "uv.lock", [_pkg("attrs", [("attrs-1.0-py3-none-any.whl", digest)])])
    bad = _lock(tmp_path / "bad.lock", [_pkg("src", [], sdist_only=True)])
    root = str(tmp_path / "cache")
    r = _cli("add", "--json", "--dir", root, "--from", str(house), str(good))
    assert r.returncode == Exit.OK, r.stderr
    assert json.loads(r.stdout) == {"ok": True, "dir": root, "wheels": 1,
                                    "fetched": ["attrs-1.0-py3-none-any.whl"]}
    r = _cli("add", "--json", "--dir", root, str(bad))
    assert r.returncode == Exit.USAGE and "package src 1.0" in r.stderr
    assert json.loads(r.stdout)["ok"] is False
    (house / "attrs-1.0-py3-none-any.whl").unlink()
    (tmp_path / "cache" / "files.pythonhosted.org").rename(tmp_path / "gone")
    r = _cli("add", "--dir", root, "--from", str(house), str(good))
    assert r.returncode == Exit.FAILED and "missing (attrs 1.0)" in r.stderr
    assert _cli("add", "--help").returncode == 0


def test_a_python_filter_keeps_what_that_python_installs(tmp_path: Path, house: Path) -> None:
    names = ["fast-1.0-cp311-cp311-manylinux_2_17_x86_64.whl",
             "fast-1.0-cp312-cp312-manylinux_2_17_x86_64.whl",
             "fast-1.0-cp310-abi3-manylinux_2_17_x86_64.whl",
             "fast-1.0-cp313-abi3-manylinux_2_17_x86_64.whl",
             "fast-1.0-py3-none-any.whl"]
    src = _lock(tmp_path / "uv.lock", [
        _pkg("fast", [(n, _wheel(house, n, n.encode())) for n in names]),
        # a version the lock holds for other Pythons only: nothing to cache, no error
        _pkg("newer", [("newer-2.0-cp313-cp313-manylinux_2_17_x86_64.whl", "c" * 64)])])
    got = [w.filename for w in lock.wheels(src, pythons=[(3, 12)])]
    assert got == [names[1], names[2], names[4]]
    assert [w.filename for w in lock.wheels(src)] == [
        *names, "newer-2.0-cp313-cp313-manylinux_2_17_x86_64.whl"]


def test_a_package_required_only_off_linux_needs_no_linux_wheel(tmp_path: Path,
                                                                 house: Path) -> None:
    """miniray's own lock: cffi only under ``sys_platform == 'win32'`` (Windows wheels
    only); a worker never installs it. Required on Linux too, it is refused again."""
    pure = _wheel(house, "pure-1.0-py3-none-any.whl", b"pure")
    win = ("cffi-1.0-cp312-cp312-win_amd64.whl", "d" * 64)
    marker = "platform_python_implementation == 'CPython' and sys_platform == 'win32'"

    def with_deps(deps: str) -> Path:
        return _lock(tmp_path / "uv.lock", [
            _pkg("pure", [("pure-1.0-py3-none-any.whl", pure)]) + f"dependencies = [{deps}]\n",
            _pkg("cffi", [win])])

    got = lock.wheels(with_deps(f'{{ name = "cffi", marker = "{marker}" }}'), pythons=[(3, 12)])
    assert [w.filename for w in got] == ["pure-1.0-py3-none-any.whl"]
    assert [w.filename for w in lock.wheels(with_deps(
        f'{{ name = "cffi", marker = "{marker}" }}'))] == ["pure-1.0-py3-none-any.whl"]
    for deps in ('{ name = "cffi" }', '{ name = "cffi", marker = "sys_platform == \'linux\'" }',
                 f'{{ name = "cffi", marker = "{marker}" }}, {{ name = "cffi" }}'):
        with pytest.raises(lock.LockError, match=r"package cffi 1\.0 has no wheel for"):
            lock.wheels(with_deps(deps))
