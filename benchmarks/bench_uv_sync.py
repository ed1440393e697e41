"""A job venv from the site's Python package cache: ``uv sync --frozen --offline`` of a
50-package lock (benchmarks/uv50: numpy, pandas, scipy, pydantic... locked against PyPI)
into a fresh venv, against comma's "< 2 s" for a job's environment.

The pinned uv (the inventory's compute.uv wheel, checked against its sha256), the site
cache filled by ``fleet.pycache`` from the lock (once, from PyPI; kept in --work) and served
by a real nginx on 127.0.0.1 with the cache's location (salt/provisioning/files/
pxe-nginx.conf.jinja's /pypi/), the worker's uv settings (worker.env: UV_OFFLINE=1,
UV_LINK_MODE=symlink, UV_PYTHON_DOWNLOADS=never) and the worker's fleet-uv-warm (its
template, uv's path filled in). Runs in turn, each into a fresh venv:

- ``warm node``: the node's uv cache already holds the lock's wheels (a job after the
  first on that node): ``uv sync --frozen --offline`` alone; with the worker's
  UV_LINK_MODE=symlink, and with uv's default link mode (hardlink);
- ``cold node``: an empty uv cache (a node's first job with this lock): ``fleet-uv-warm``
  (fetch from the site cache over HTTP, unpack into the uv cache) then the same sync.

    .venv/bin/python benchmarks/bench_uv_sync.py --runs 5 --write docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report

ROOT = report.ROOT
sys.path.insert(0, str(ROOT / "tools"))
from fleet.inventory.load import parse  # noqa: E402
from fleet.pycache import lock, store  # noqa: E402

SECTION = "## Job venv from the site's Python package cache (uv sync, 50 packages)"
PROJECT = ROOT / "benchmarks" / "uv50"
WARM = ROOT / "salt" / "compute" / "files" / "fleet-uv-warm.sh.jinja"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
TARGET_S = 2.0  # comma: a job's environment in under 2 s


def pinned_uv(work: Path) -> tuple[Path, str]:
    """The inventory's uv wheel (sha256-checked), its uv binary extracted; its version."""
    uv = parse((ROOT / "inventory.yaml").read_text(), "inventory.yaml").raw.compute
    assert uv is not None
    wheel = work / uv.uv.source.rsplit("/", 1)[1]
    if not wheel.exists():
        with urllib.request.urlopen(uv.uv.source, timeout=300) as r:
            wheel.write_bytes(r.read())
    if hashlib.sha256(wheel.read_bytes()).hexdigest() != uv.uv.sha256:
        raise SystemExit(f"{wheel}: not the inventory's sha256 {uv.uv.sha256}")
    binary = work / "uv"
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".data/scripts/uv"))
        binary.write_bytes(z.read(name))
    binary.chmod(0o755)
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    return binary, version


def nginx(work: Path, cache: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (work / "empty").mkdir(exist_ok=True)
    user = "user root;\n" if os.geteuid() == 0 else ""
    (work / "nginx.conf").write_text(
        f"{user}daemon off;\npid {work}/nginx.pid;\nerror_log {work}/nginx.log;\nevents {{}}\n"
        f"http {{\n access_log off;\n server {{\n  listen 127.0.0.1:{port};\n"
        f"  root {work}/empty;\n  location ^~ /pypi/ {{\n   alias {cache}/;\n"
        f"   index index.html;\n  }}\n }}\n}}\n")
    proc = subprocess.Popen([NGINX, "-p", str(work), "-c", str(work / "nginx.conf")])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/pypi"
        except OSError:
            time.sleep(0.1)
    proc.terminate()
    raise SystemExit("nginx did not listen")


def run(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    return took


def measure(work: Path, uv: Path, url: str, runs: int) -> dict[str, list[float]]:
    warm = work / "fleet-uv-warm"
    warm.write_text(WARM.read_text().replace("{{ uv }}", str(uv)))
    warm.chmod(0o755)
    project = work / "project"
    shutil.copytree(PROJECT, project, dirs_exist_ok=True)
    base = {"PATH": os.environ["PATH"], "HOME": str(work), "UV_OFFLINE": "1",
            "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1", "FLEET_PYCACHE_URL": url,
            "UV_PYTHON": "{}.{}".format(*sys.version_info[:2]),
            "UV_PROJECT_ENVIRONMENT": str(work / "venv"),
            "UV_CACHE_DIR": str(work / "uv-cache-warm")}
    sync = [str(uv), "sync", "--frozen", "--offline", "--quiet"]
    run([str(warm), str(project)], base, work)  # the warm cases' node cache
    out: dict[str, list[float]] = {"warm node, UV_LINK_MODE=symlink (worker.env)": [],
                                   "warm node, uv's default link mode": [],
                                   "cold node: fleet-uv-warm + sync": []}
    for _ in range(runs):
        for case, times in out.items():
            env = dict(base)
            shutil.rmtree(work / "venv", ignore_errors=True)
            if case.startswith("cold"):
                env["UV_CACHE_DIR"] = str(work / "uv-cache-cold")
                shutil.rmtree(env["UV_CACHE_DIR"], ignore_errors=True)
                t0 = time.perf_counter()
                run([str(warm), str(project)], env, work)
                run([*sync, "--link-mode", "symlink"], env, project)
                times.append(time.perf_counter() - t0)
            else:
                mode = ["--link-mode", "symlink"] if "symlink" in case else []
                times.append(run([*sync, *mode], env, project))
            count = len(list((work / "venv").glob("lib/python*/site-packages/*.dist-info")))
            if count != 50:
                raise SystemExit(f"{case}: {count} packages installed, not 50")
    return out


def section(results: dict[str, list[float]], uv_version: str, python: str, wheels: int,
            mb: float, runs: int, load: str) -> str:
    rows = "\n".join(
        f"| {case} | {statistics.median(t):.2f} | {min(t):.2f} | {max(t):.2f} | "
        f"{'yes' if statistics.median(t) < TARGET_S else 'no'} |"
        for case, t in results.items())
    return f"""{SECTION}

`uv sync --frozen --offline` of benchmarks/uv50/uv.lock (50 packages installed: numpy,
pandas, scipy, pydantic, sqlalchemy, pillow, ...) into a fresh venv, {runs} runs of each case
in turn; seconds, wall clock from spawn to exit of each command.

### Machine

- CPU: {report.cpu_model()}, {os.cpu_count()} cores; memory {report.mem_total()}
- OS: {report.os_name()}; {python}; {uv_version} (the inventory's pinned wheel)
- load average at start: {load}; commit {report.commit()}
- site cache: {wheels} wheels, {mb:.0f} MB (`python -m fleet.pycache add --python` of this
  host's Python), served by nginx on 127.0.0.1 (the workers reach it over the provisioning
  network; only the cold case fetches from it)

### Reproduce

```sh
make bench-uv
# or: .venv/bin/python benchmarks/bench_uv_sync.py --runs 5 --write docs/benchmarks.md
```

### Results

| case | median s | min s | max s | < {TARGET_S:.0f} s (comma) |
|---|---|---|---|---|
{rows}
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "fleet-bench-uv",
                    help="the uv wheel and the site cache, kept between runs (default: "
                         "%(default)s)")
    ap.add_argument("--write", type=Path, metavar="FILE",
                    help="replace this benchmark's section of FILE (docs/benchmarks.md)")
    args = ap.parse_args(argv)
    load = report.load_average()
    args.work.mkdir(parents=True, exist_ok=True)
    uv, version = pinned_uv(args.work)
    py = sys.version_info[:2]
    wanted = lock.wheels(PROJECT / "uv.lock", pythons=[py])
    store.add(args.work / "site", wanted)
    mb = sum((args.work / "site" / w.path).stat().st_size for w in wanted) / 1e6
    server, url = nginx(args.work, args.work / "site")
    try:
        with tempfile.TemporaryDirectory(prefix="run-", dir=args.work) as tmp:
            results = measure(Path(tmp), uv, url, args.runs)
    finally:
        server.terminate()
        server.wait(timeout=20)
    text = section(results, version, f"Python {py[0]}.{py[1]}", len(wanted), mb, args.runs,
                   load)
    print(text)
    if args.write:
        report.replace_section(args.write, SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
