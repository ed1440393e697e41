"""miniray for the tiers that run it (tests/lab/test_miniray.py, tests/vm/test_compute_vm.py):
a checkout named by ``FLEET_MINIRAY_SRC``, packed and locked as a site's pin is, with its
packages in the site's Python package cache. Nothing of miniray is written into this
repository: every file built from it goes under the caller's work directory.

miniray is not part of fleet and not on PyPI: without ``FLEET_MINIRAY_SRC`` the callers
skip, saying so (:data:`SKIP_REASON`)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC_ENV = "FLEET_MINIRAY_SRC"
SKIP_REASON = (f"SKIPPED: a real miniray needs a miniray checkout: set {SRC_ENV} "
               "(e.g. git -C MINIRAY archive HEAD | tar -x -C /tmp/miniray; "
               f"{SRC_ENV}=/tmp/miniray)")
PYTHON = "3.12"  # the workers' CPython (salt/compute/defaults.yaml: python3.12)
# compute.worker's paths (salt/compute/defaults.yaml)
ENV = "/etc/fleet/miniray/worker.env"
SCRIPT = "/etc/fleet/miniray/worker.sbatch"  # its job script, submitted unchanged
MINIRAY_DIR = "/opt/fleet/miniray"
WARM = ROOT / "salt" / "compute" / "files" / "fleet-uv-warm.sh.jinja"


def source() -> Path | None:
    """The checkout ``FLEET_MINIRAY_SRC`` names (None: unset); fails where it is not a
    miniray checkout with its lock."""
    if not os.environ.get(SRC_ENV):
        return None
    src = Path(os.environ[SRC_ENV]).resolve()
    if not (src / "worker.py").is_file() or not (src / "executor.py").is_file():
        pytest.fail(f"{SRC_ENV}={src} is not a miniray checkout (no worker.py, executor.py)")
    if not (src / "uv.lock").is_file():
        pytest.fail(f"{SRC_ENV}={src} has no uv.lock: compute.worker syncs miniray's venv "
                    "with miniray's own lock")
    return src


def miniray_deps(src: Path) -> list[str]:
    project = tomllib.loads((src / "pyproject.toml").read_text())["project"]
    return [str(d) for d in project["dependencies"]]


def uv_from_wheel(wheel: Path, sha256: str, dest: Path) -> Path:
    """The uv binary of the pinned compute.uv wheel, checked against the inventory's
    sha256 as the role checks it: the uv the workers run."""
    if hashlib.sha256(wheel.read_bytes()).hexdigest() != sha256:
        pytest.fail(f"{wheel}: not the inventory's sha256 {sha256}")
    with zipfile.ZipFile(wheel) as z:
        dest.write_bytes(z.read(next(n for n in z.namelist()
                                     if n.endswith(".data/scripts/uv"))))
    dest.chmod(0o755)
    return dest


def build_tree(src: Path, dest: Path, uv: Path) -> None:
    """A monorepo-like job tree: a virtual uv project with miniray's dependencies and the
    miniray checkout as its ``miniray/``, locked here against PyPI with the pinned uv.
    The lock is for Linux x86_64 CPython 3.12 (the workers'); requires-python admits this
    host's CPython, which uv needs to lock (it downloads none)."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest / "miniray", symlinks=True,
                    ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__"))
    marker = (f"sys_platform == 'linux' and platform_machine == 'x86_64' and "
              f"python_full_version >= '{PYTHON}' and python_full_version < '3.13'")
    (dest / "pyproject.toml").write_text("\n".join([
        "# written by tests/support/miniray.py: a stand-in for a monorepo with miniray",
        "[project]", 'name = "fleet-lab-xx"', 'version = "0"',
        f'requires-python = ">={sys.version_info.major}.{sys.version_info.minor}"',
        f"dependencies = {json.dumps(miniray_deps(src))}", "", "[tool.uv]",
        "package = false", f"environments = [{json.dumps(marker)}]", ""]))
    env = {**os.environ, "UV_CACHE_DIR": str(dest.parent / "uv-cache"),
           "UV_PYTHON": sys.executable, "UV_PYTHON_DOWNLOADS": "never"}
    r = subprocess.run([str(uv), "lock", "--project", str(dest)], env=env,
                       capture_output=True, text=True, timeout=600, check=False)
    if r.returncode:
        pytest.fail(f"uv lock of the job tree against PyPI failed: {r.stderr[-3000:]}")


def pack_miniray(src: Path, dest: Path) -> str:
    """The checkout as ``git archive --format=tar --prefix=miniray/`` packs it (its
    ``miniray -> .`` link kept a link; no .git, .venv or __pycache__), at ``dest``: its
    sha256."""
    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if {".git", ".venv", "__pycache__"} & set(Path(info.name).parts):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        if not info.issym():
            info.mode = 0o755 if info.isdir() or info.mode & 0o100 else 0o644
        return info

    with tarfile.open(dest, "w", format=tarfile.GNU_FORMAT) as tar:
        tar.add(src, arcname="miniray", filter=clean)
    return hashlib.sha256(dest.read_bytes()).hexdigest()


def fill_pycache(cache: Path, *locks: Path, python: tuple[str, ...] = ()) -> None:
    """The site's Python package cache filled from ``locks`` (uv.lock files) into
    ``cache`` by the site's own fill (`python -m fleet.pycache add`, ``--python X.Y`` for
    each of ``python``: only that CPython's wheels), on this host, which reaches PyPI; a
    file already there is checked, not fetched again."""
    fill = subprocess.run(
        [sys.executable, "-m", "fleet.pycache", "add", "--dir", str(cache),
         *(f"--python={v}" for v in python), *map(str, locks)],
        env={**os.environ, "PYTHONPATH": str(ROOT / "tools")},
        capture_output=True, text=True, timeout=900, check=False)
    assert fill.returncode == 0, fill.stderr


def warm_task_cache(script: str, user: str, codedir: str) -> str:
    """The shell command that warms the task user's uv cache (the one ``script``, the
    rendered worker.sbatch, points the worker's UV_CACHE_DIR at) for ``codedir``'s lock
    from the site cache, as that user (fleet-uv-warm, worker.env in the environment):
    the step before a lock's first job."""
    uv_cache = re.search(r"^export UV_CACHE_DIR=(\S+)$", script, re.MULTILINE)
    assert uv_cache is not None, script
    body = (f"set -a; . {ENV}; set +a; export UV_CACHE_DIR={uv_cache[1]}; "
            f"fleet-uv-warm {codedir}")
    return f"runuser -u {shlex.quote(user)} -- sh -c {shlex.quote(body)}"
