"""The fleet page behind a real nginx configured by the provisioning role's own site
template (salt/provisioning/files/pxe-nginx.conf.jinja): served on the management address
and port, with the page's Content-Security-Policy, refused to any other network."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import jinja2
import pytest

from support.cli import ROOT, SMALL, run_fleet

SITE = ROOT / "salt" / "provisioning" / "files" / "pxe-nginx.conf.jinja"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def nginx(work: Path, page: Path, cidrs: list[str]) -> Iterator[str]:
    assert shutil.which("nginx"), "no nginx: `bash tools/install-host-deps.sh` installs it"
    pxe_port, page_port = _free_port(), _free_port()
    site = jinja2.Template(SITE.read_text()).render(
        root=work / "pxe" / "http", state=work / "state", images=work / "images",
        port=f"127.0.0.1:{pxe_port}", page=page, page_port=page_port,
        management="127.0.0.1", management_cidrs=cidrs)
    (work / "pxe" / "nginx").mkdir(parents=True)
    (work / "pxe" / "nginx" / "tokens.conf").write_text("")
    (work / "pxe" / "http").mkdir()
    ndir = work / "nginx"
    ndir.mkdir()
    (ndir / "site.conf").write_text(site)
    temps = "".join(f"  {k}_temp_path {ndir}/{k};\n"
                    for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (ndir / "nginx.conf").write_text(
        "user root;\n"  # workers that can read the 0700 tmp_path (ignored unless root)
        f"worker_processes 1;\npid {ndir}/nginx.pid;\nerror_log {ndir}/error.log;\n"
        "events { worker_connections 64; }\n"
        f"http {{\n  include /etc/nginx/mime.types;\n  access_log off;\n{temps}"
        f"  include {ndir}/site.conf;\n}}\n")
    args = ["nginx", "-p", str(ndir), "-e", str(ndir / "error.log"), "-c",
            str(ndir / "nginx.conf")]
    subprocess.run([*args, "-t", "-q"], check=True, capture_output=True)
    proc = subprocess.Popen([*args, "-g", "daemon off;"])
    try:
        url = f"http://127.0.0.1:{page_port}/"
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", page_port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def page(tmp_path: Path) -> Path:
    st = tmp_path / "status.json"
    st.write_text(json.dumps({"nodes": []}))
    r = run_fleet("page", "-i", str(SMALL), "--out", str(tmp_path / "page"), "--status",
                  str(st))
    assert r.returncode == 0, r.stderr
    return tmp_path / "page"


def test_served_on_the_management_address_with_its_policy(tmp_path: Path, page: Path) -> None:
    with nginx(tmp_path, page, ["127.0.0.0/8"]) as url:
        with urllib.request.urlopen(url, timeout=10) as r:
            assert r.status == 200
            assert b'src="page.js"' in r.read()
            assert "script-src 'self'" in r.headers["Content-Security-Policy"]
        with urllib.request.urlopen(url + "view.json", timeout=10) as r:
            assert r.headers["Content-Type"].startswith("application/json")
            assert "no-cache" in r.headers["Cache-Control"]
            assert json.load(r)["nodes"]
    site = SITE.read_text()
    assert "listen {{ management }}:{{ page_port }};" in site


def test_refused_outside_the_management_network(tmp_path: Path, page: Path) -> None:
    with nginx(tmp_path, page, ["10.1.0.0/22"]) as url:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(url, timeout=10)
        assert err.value.code == 403
