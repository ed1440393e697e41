"""The Python package cache's rendered parts: head-01's nginx serves the cache directory at
/pypi/ (a real nginx with the rendered location block, over a cache that fleet.pycache
filled here: the index page and the wheel answered, the half-written .part-* files and a
listing refused); a worker's worker.env points uv at the site only, and its fleet-uv-warm
rewrites the job lock's file URLs to the site and nothing else (run with a stand-in uv,
named below, that records what it was given).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from fleet import saltrender
from fleet.pycache import lock, store
from support import harness
from support.compute_fixture import write_pillar

FIXTURE_LOCK = harness.ROOT / "tests" / "fixtures" / "pycache" / "project" / "uv.lock"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


@pytest.fixture(scope="module")
def renderer(tmp_path_factory: pytest.TempPathFactory) -> saltrender.Renderer:
    root = write_pillar(tmp_path_factory.mktemp("pycache"))
    saltrender.quiet_salt_logging()
    return saltrender.Renderer(harness.ROOT / "salt", root / "pillar", root / "secrets",
                               root / "cache")


def _rendered(renderer: saltrender.Renderer, node: str) -> saltrender.Rendered:
    res = renderer.render(node)
    assert not res.errors, res.errors
    return res


def test_the_worker_env_sends_uv_to_the_site_only(renderer: saltrender.Renderer) -> None:
    env = _rendered(renderer, "gpu-02").files["compute-worker-file-managed-env"].splitlines()
    # head-01, the small inventory's provisioning host, on its boot HTTP port (80)
    assert {"FLEET_PYCACHE_URL=http://10.1.0.10/pypi", "UV_OFFLINE=1",
            "UV_PYTHON_DOWNLOADS=never"} <= set(env)


def _location(conf: str) -> str:
    m = re.search(r"^  location \^~ /pypi/ \{\n.*?^  \}\n", conf, re.M | re.S)
    assert m, conf
    return m.group(0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""


@pytest.mark.skipif(not Path(NGINX).exists() or os.geteuid() != 0,
                    reason="needs nginx (apt-get install nginx) and root (its workers read "
                           "the scratch cache as root)")
def test_nginx_serves_the_cache_with_the_rendered_location(renderer: saltrender.Renderer,
                                                           tmp_path: Path) -> None:
    res = _rendered(renderer, "head-01")
    site = res.files["provisioning-pxe-file-managed-nginx-site"]
    ids = {c["__id__"]: c for c in res.lowstate}
    assert ids["provisioning-pycache-file-directory-root"]["name"] == "/srv/fleet/pypi"
    cache = tmp_path / "pypi"
    block = _location(site).replace("/srv/fleet/pypi/", f"{cache}/")
    # the fixture lock's first wheel, from a local wheelhouse of a stand-in file whose
    # sha256 the lock is made to carry (the cache compares bytes with sha256s only)
    wheel = lock.wheels(FIXTURE_LOCK)[0]
    body = b"a stand-in wheel"
    digest = hashlib.sha256(body).hexdigest()
    (tmp_path / "house").mkdir()
    (tmp_path / "house" / wheel.filename).write_bytes(body)
    entry = lock.Wheel(wheel.package, wheel.version, wheel.filename, wheel.url, digest,
                       wheel.path)
    store.add(cache, [entry], tmp_path / "house")
    (cache / Path(wheel.path).parent / ".part-x").write_text("half")
    port = _free_port()
    (tmp_path / "nginx.conf").write_text(
        f"user root;\ndaemon off;\npid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\n"
        f"events {{}}\nhttp {{\n access_log off;\n server {{\n  listen 127.0.0.1:{port};\n"
        f"  root {tmp_path}/empty;\n{block} }}\n}}\n")
    proc = subprocess.Popen([NGINX, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
                            stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.communicate()[1].decode()
                time.sleep(0.1)
        base = f"http://127.0.0.1:{port}/pypi"
        status, page = _get(f"{base}/simple/{wheel.package}/")
        assert status == 200 and f"#sha256={digest}".encode() in page
        href = re.search(rb'href="([^"#]+)#', page)
        assert href is not None
        assert _get(f"{base}/simple/{wheel.package}/{href.group(1).decode()}") == (200, body)
        assert _get(f"{base}/{Path(wheel.path).parent}/.part-x")[0] == 403
        assert _get(f"{base}/{Path(wheel.path).parent}/")[0] == 403  # no listing
    finally:
        proc.terminate()
        proc.wait(timeout=20)


STAND_IN_UV = """#!/bin/sh
# stand-in for uv: records its arguments, environment and the lock it was run with
printf '%s\\n' "$@" > "$OUT/argv"
env > "$OUT/env"
cp uv.lock "$OUT/uv.lock"
"""


def test_fleet_uv_warm_points_the_locks_files_at_the_site(renderer: saltrender.Renderer,
                                                          tmp_path: Path) -> None:
    script = _rendered(renderer, "gpu-02").files["compute-worker-file-managed-uv-warm"]
    assert "'/usr/local/bin/uv' sync --frozen" in script
    uv = tmp_path / "uv"
    uv.write_text(STAND_IN_UV)
    uv.chmod(0o755)
    warm = tmp_path / "fleet-uv-warm"
    warm.write_text(script.replace("'/usr/local/bin/uv'", f"'{uv}'"))
    warm.chmod(0o755)
    project = FIXTURE_LOCK.parent
    out = tmp_path / "out"
    out.mkdir()
    env = {"PATH": os.environ["PATH"], "OUT": str(out), "UV_OFFLINE": "1",
           "FLEET_PYCACHE_URL": "http://10.1.0.10/pypi"}
    r = subprocess.run([str(warm), str(project)], env=env, capture_output=True, text=True,
                       timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert (out / "argv").read_text().split() == [
        "sync", "--frozen", "--no-install-project", "--no-install-workspace",
        "--no-install-local", "--no-progress", "--quiet"]
    assert "UV_OFFLINE=" not in (out / "env").read_text()
    # every file URL, and only those, now names the site's copy at its site path
    original = FIXTURE_LOCK.read_text().splitlines()
    rewritten = (out / "uv.lock").read_text().splitlines()
    changed = [(a, b) for a, b in zip(original, rewritten, strict=True) if a != b]
    assert changed and all(
        b == a.replace('{ url = "https://', '{ url = "http://10.1.0.10/pypi/') for a, b in changed)
    assert sum('url = "https://files.pythonhosted.org/' in a for a in original) == len(changed)
    assert not any("http://10.1.0.10" in b for b in rewritten if "registry =" in b)
    paths = {w.path for w in lock.wheels(FIXTURE_LOCK)}
    assert paths <= {m for b in rewritten for m in re.findall(r'url = "http://10\.1\.0\.10/pypi/'
                                                              r'([^"]+\.whl)"', b)}
    bad = subprocess.run([str(warm), str(project)], env={**env, "FLEET_PYCACHE_URL": "x#y"},
                         capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 2 and "not a plain URL" in bad.stderr
