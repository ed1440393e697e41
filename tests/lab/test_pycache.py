"""The site's Python package cache in the lab: filled from a job project's uv.lock
(tests/fixtures/pycache/project, locked against PyPI), served by head-01's nginx at /pypi/
(provisioning.pycache, provisioning.pxe); a worker builds the job's venv with
``fleet-uv-warm`` then ``uv sync --frozen --offline`` from it (compute.worker) and imports
its packages; a lock naming a package the cache does not hold fails, naming it.

Stand-in, named: the fill runs on this host, which reaches PyPI (the lab's containers
cannot), and its tree is copied into head-01's cache directory, where a site runs the fill
on the provisioning host itself (labtools.fill_site_cache).
"""

from __future__ import annotations

import shlex
import subprocess
import uuid
from collections.abc import Iterator

import pytest
from labtools import ROOT, Lab, fill_site_cache, node_ids, podman_exec, sh

from fleet.lab import podman as pm

WORKER = node_ids("slurm.compute")[0]
FIXTURES = ROOT / "tests" / "fixtures" / "pycache"
ENV = "/etc/fleet/miniray/worker.env"  # compute.worker's env_dir (salt/compute/defaults.yaml)


@pytest.fixture(scope="module")
def site_cache(lab: Lab) -> str:
    """head-01's cache filled from the job project's lock: its URL (pillar compute)."""
    return fill_site_cache(lab, FIXTURES / "project" / "uv.lock")


@pytest.fixture
def workdir(lab: Lab) -> Iterator[str]:
    """A fresh directory on the worker, owned by the task user: a job's project copies
    and its own uv cache (so nothing a previous run cached counts)."""
    user = lab.pillar("compute")["compute"]["worker"]["task_user"]
    d = f"/tmp/pycache-{uuid.uuid4().hex[:8]}"
    for name in ("project", "missing"):
        podman_exec(lab, WORKER, "mkdir", "-p", d)
        pm.podman(lab.paths, "cp", str(FIXTURES / name),
                  f"{lab.plan.node(WORKER).container}:{d}/{name}", timeout=60)
    assert podman_exec(lab, WORKER, "chown", "-R", f"{user}:", d).returncode == 0
    yield d
    podman_exec(lab, WORKER, "rm", "-rf", d)


def as_task_user(lab: Lab, workdir: str, script: str) -> subprocess.CompletedProcess[str]:
    """``script`` as the task user with worker.env's variables, as a job's venv step."""
    user = lab.pillar("compute")["compute"]["worker"]["task_user"]
    body = (f"set -a; . {ENV}; set +a; export UV_CACHE_DIR={workdir}/uv-cache; "
            f"cd {workdir}; {script}")
    return podman_exec(lab, WORKER, "runuser", "-u", user, "--", "sh", "-c", body,
                       timeout=180)


def test_worker_env_points_uv_at_the_site_cache_only(lab: Lab, site_cache: str) -> None:
    env = sh(lab.host(WORKER), f"cat {ENV}").stdout
    assert f"FLEET_PYCACHE_URL={site_cache}\n" in env
    assert "UV_OFFLINE=1\n" in env and "UV_PYTHON_DOWNLOADS=never\n" in env
    # what the cache serves: its PEP 503 index, fetched from the worker
    index = sh(lab.host(WORKER), "python3 -c " + shlex.quote(
        "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read()"
        ".decode())") + f" {site_cache}/simple/attrs/").stdout
    assert "attrs-" in index and "#sha256=" in index


def test_a_job_venv_is_built_offline_from_the_site_cache(lab: Lab, site_cache: str,
                                                         workdir: str) -> None:
    r = as_task_user(lab, workdir, "fleet-uv-warm project && cd project && "
                     "uv sync --frozen --offline && .venv/bin/python -c "
                     "'import attrs, dateutil, idna, packaging; print(\"imported\")'")
    assert r.returncode == 0, r.stderr
    assert "imported" in r.stdout
    # the job's lock is the one committed (PyPI's URLs), not a rewritten copy
    lock = podman_exec(lab, WORKER, "cat", f"{workdir}/project/uv.lock").stdout
    assert lock == (FIXTURES / "project" / "uv.lock").read_text()


def test_a_package_the_cache_lacks_fails_naming_it(lab: Lab, site_cache: str,
                                                   workdir: str) -> None:
    """The job lock plus iniconfig, which the site cache lacks: the warm step fails with
    the site's 404 for it; with the rest in the uv cache (warmed from the job's lock, as a
    node that ran that job), the offline sync fails naming it."""
    assert as_task_user(lab, workdir, "fleet-uv-warm project").returncode == 0
    warm = as_task_user(lab, workdir, "fleet-uv-warm missing")
    assert warm.returncode != 0
    assert "iniconfig" in warm.stderr and "404" in warm.stderr, warm.stderr
    sync = as_task_user(lab, workdir, "cd missing && uv sync --frozen --offline")
    assert sync.returncode != 0
    assert "iniconfig" in sync.stderr and "wasn't found in the cache" in sync.stderr, sync.stderr
