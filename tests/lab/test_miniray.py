"""A real miniray job end to end in the lab: an executor on the head node submits to the
central Valkey (compute.valkey), two workers (compute.worker containers) run the tasks,
and the results, a raised error and a timeout come back to the executor.

miniray is not part of fleet and not on PyPI: the test takes it only from a checkout named
by ``FLEET_MINIRAY_SRC`` (e.g. ``git -C MINIRAY archive HEAD | tar -x -C /tmp/miniray``)
and skips, saying so, without it. Nothing of miniray is written into this repository: the
job tree is built under the lab's own directory (.lab/miniray-test/).

The job's code reaches the workers through the code sync: the head pushes a monorepo-like
tree (a virtual ``fleet-lab-xx`` uv project whose ``miniray/`` is the checkout) to the
rsync module ``code_nfs`` as a per-job copy (``--copy-dest=/xx``, as miniray's
``use_local_codedir``), and the workers read it at ``/code.nfs/branches/caches/<job>/xx``.

Its packages take the production path (docs/operations.md, Python package cache): the
tree is locked on this host against PyPI with the pinned uv (the lab's compute.uv wheel,
checked against its sha256), head-01's site cache is filled from that lock
(labtools.fill_site_cache), each worker's task user warms its uv cache for the lock with
``fleet-uv-warm <codedir>`` (worker.env in the environment), and each task's venv is
miniray's own unmodified ``uv sync --frozen`` of the codedir, offline (``UV_OFFLINE=1``
from worker.env). The workers' own venv (running worker.py) and the executor's on the head
are synced the same way, from the site cache.

Stand-ins and test-only parts, named:
- ``/code.nfs`` on the workers is a read-only bind mount of the export (the lab's kernel
  has no NFS client; fleet/lab/nodes.py); on the head, where the export lives, the test
  links ``/code.nfs`` to it for the duration (miniray's executor checks that the codedir
  exists on the submitting host).
- The fill runs on this host and its tree is copied into head-01's cache (the lab's
  containers cannot reach PyPI; labtools.fill_site_cache). The head has no compute.worker
  role: it gets the pinned uv and fleet-uv-warm (the role's template, uv's path filled
  in) under /opt/fleet-test-miniray for the executor's venv.
- The worker runs under a TEST-ONLY cgroup SHIM (tests/lab/miniray_shim.py: this host
  has cgroup v1), started with ``systemd-run`` as a transient unit with the role's
  environment file (/etc/fleet/miniray/worker.env); in production it runs as a requeued
  Slurm job on the preemptible partition. The shim also lets the
  worker go on where raising its own priority is refused (no CAP_SYS_NICE in a lab
  container) and run CPU-only where NVML finds the driver's library but no GPU (the lab's
  GPU containers). The task slots are the role's real procNNN users and groups.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from labtools import ROOT, Lab, fill_site_cache, node_ids, podman_exec, poll

from fleet.lab import podman as pm

SRC_ENV = "FLEET_MINIRAY_SRC"
OPT = "/opt/fleet-test-miniray"
ENV = "/etc/fleet/miniray/worker.env"  # compute.worker's env_dir (salt/compute/defaults.yaml)
WARM = ROOT / "salt" / "compute" / "files" / "fleet-uv-warm.sh.jinja"
PYTHON = "3.12"  # the workers' CPython (salt/compute/defaults.yaml: python3.12)
UNIT = "fleet-test-miniray-worker"
WORKERS = node_ids("slurm.compute")[:2]  # compute.worker and codesync.client too

if not os.environ.get(SRC_ENV):
    pytest.skip(f"SKIPPED: miniray end to end needs a miniray checkout: set {SRC_ENV} "
                "(e.g. git -C MINIRAY archive HEAD | tar -x -C /tmp/miniray; "
                f"{SRC_ENV}=/tmp/miniray)", allow_module_level=True)

# What the executor runs on the head (the venv's python, PYTHONPATH: the local tree).
EXECUTOR = r"""
import json, socket, sys, time
from miniray import Executor, Limits, MinirayError
redis_host, queue, codedir = sys.argv[1:4]
def square(x):
    import socket
    return x * x, socket.gethostname()
def boom(x):
    raise ValueError(f"boom {x}")
def sleepy(s):
    import time
    time.sleep(s)
    return s
def failure(fut):
    try:
        return {"result": fut.result()}
    except MinirayError as e:
        return {"type": e.exception_type, "worker": e.worker, "desc": e.exception_desc[-800:]}
kw = dict(queue_name=queue, redis_host=redis_host, codedir=codedir, env={"PYTHONPATH": codedir})
out = {}
t0 = time.monotonic()
with Executor(job_name="fleet-lab-map", **kw) as ex:
    out["map"] = [list(r) for r in ex.map(square, range(20))]
out["map_s"] = time.monotonic() - t0
t0 = time.monotonic()
with Executor(job_name="fleet-lab-boom", **kw) as ex:
    out["boom"] = failure(ex.submit(boom, 7))
out["boom_s"] = time.monotonic() - t0
t0 = time.monotonic()
with Executor(job_name="fleet-lab-timeout", limits=Limits(timeout_seconds=2), **kw) as ex:
    out["timeout"] = failure(ex.submit(sleepy, 60))
out["timeout_s"] = time.monotonic() - t0
print(json.dumps(out))
"""

ACTIVE = r"""
import json, sys, redis
r = redis.StrictRedis(host=sys.argv[1], port=6379, db=1)
print(json.dumps(sorted(k.decode() for k in r.keys(f"active:{sys.argv[2]}:*"))))
"""


@dataclass
class Rig:
    lab: Lab
    head: str  # hostname of the executor's node (the code sync host)
    redis_host: str  # the central Valkey's address, as the head reaches it
    queue: str
    codedir: str  # the job's copy, as the workers (and the head's link) name it
    url: str  # the rsync module
    pycache: str  # the site's Python package cache (FLEET_PYCACHE_URL)


def run_on(lab: Lab, node: str, cmd: str, timeout: float = 300) -> str:
    r = podman_exec(lab, node, "bash", "-c", cmd, timeout=timeout)
    if r.returncode:
        pytest.fail(f"{node}: `{cmd[:300]}` exited {r.returncode}:\n{r.stdout[-3000:]}\n"
                    f"{r.stderr[-3000:]}")
    return r.stdout


def copy_in(lab: Lab, node: str, src: Path, dest: str) -> None:
    run_on(lab, node, f"mkdir -p {shlex.quote(str(Path(dest).parent))}")
    pm.podman(lab.paths, "cp", str(src), f"{lab.plan.node(node).container}:{dest}")


def miniray_deps(src: Path) -> list[str]:
    project = tomllib.loads((src / "pyproject.toml").read_text())["project"]
    return [str(d) for d in project["dependencies"]]


def pinned_uv(lab: Lab, work: Path) -> Path:
    """The uv binary of the lab's compute.uv wheel (.lab/artifacts), checked against the
    inventory's sha256 as the role checks it: the uv the workers run."""
    pin = lab.pillar("compute")["compute"]["uv"]
    wheel = lab.paths.lab / "artifacts" / pin["source"].rsplit("/", 1)[1]
    if hashlib.sha256(wheel.read_bytes()).hexdigest() != pin["sha256"]:
        pytest.fail(f"{wheel}: not the inventory's sha256 {pin['sha256']}")
    binary = work / "uv"
    with zipfile.ZipFile(wheel) as z:
        binary.write_bytes(z.read(next(n for n in z.namelist()
                                       if n.endswith(".data/scripts/uv"))))
    binary.chmod(0o755)
    return binary


def build_tree(src: Path, deps: list[str], dest: Path, uv: Path) -> None:
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
        "# written by tests/lab/test_miniray.py: a stand-in for a monorepo with miniray",
        "[project]", 'name = "fleet-lab-xx"', 'version = "0"',
        f'requires-python = ">={sys.version_info.major}.{sys.version_info.minor}"',
        f"dependencies = {json.dumps(deps)}", "", "[tool.uv]", "package = false",
        f"environments = [{json.dumps(marker)}]", ""]))
    env = {**os.environ, "UV_CACHE_DIR": str(dest.parent / "uv-cache"),
           "UV_PYTHON": sys.executable, "UV_PYTHON_DOWNLOADS": "never"}
    r = subprocess.run([str(uv), "lock", "--project", str(dest)], env=env,
                       capture_output=True, text=True, timeout=600, check=False)
    if r.returncode:
        pytest.fail(f"uv lock of the job tree against PyPI failed: {r.stderr[-3000:]}")


@pytest.fixture(scope="module")
def rig(lab: Lab) -> Iterator[Rig]:
    src = Path(os.environ[SRC_ENV]).resolve()
    if not (src / "worker.py").is_file() or not (src / "executor.py").is_file():
        pytest.fail(f"{SRC_ENV}={src} is not a miniray checkout (no worker.py, executor.py)")
    comp = lab.pillar("compute")["compute"]
    head = comp["codesync"]["host"]
    job = f"fleet-lab-{uuid.uuid4().hex[:12]}"
    r = Rig(lab, head, lab.pillar(f"nodes/{WORKERS[0]}")["node"]["compute"]["redis_host"],
            comp["worker"]["queue"], f"/code.nfs/branches/caches/{job}/xx",
            f"rsync://{comp['codesync']['bind']}:{comp['codesync']['port']}/code_nfs", "")
    work = lab.paths.lab / "miniray-test"
    work.mkdir(parents=True, exist_ok=True)
    uv = pinned_uv(lab, work)
    build_tree(src, miniray_deps(src), work / "xx", uv)
    r.pycache = fill_site_cache(lab, work / "xx" / "uv.lock", python=(PYTHON,))
    try:
        prepare_head(r, work, uv)
        for node in WORKERS:
            prepare_worker(r, node)
        yield r
    finally:
        for node in WORKERS:
            podman_exec(lab, node, "bash", "-c", f"systemctl stop {UNIT}; "
                        f"systemctl reset-failed {UNIT}; rm -rf {OPT}")
        export = comp["codesync"]["export"]
        podman_exec(lab, head, "bash", "-c", f"rm -rf {OPT} {export}/branches/caches/{job}; "
                    f'[ "$(readlink /code.nfs)" != {export} ] || rm /code.nfs')


def prepare_head(r: Rig, work: Path, uv: Path) -> None:
    """The pinned uv, fleet-uv-warm and the locked tree on the head; the executor's venv
    synced offline from the site cache, and the tree pushed to the code sync."""
    lab, head = r.lab, r.head
    warm = work / "fleet-uv-warm"
    warm.write_text(WARM.read_text().replace("{{ uv }}", f"{OPT}/uv"))
    warm.chmod(0o755)
    copy_in(lab, head, uv, f"{OPT}/uv")
    copy_in(lab, head, warm, f"{OPT}/fleet-uv-warm")
    copy_in(lab, head, work / "xx", f"{OPT}/xx")
    env = (f"FLEET_PYCACHE_URL={r.pycache} UV_PYTHON_DOWNLOADS=never "
           f"UV_CACHE_DIR={OPT}/uv-cache UV_PROJECT_ENVIRONMENT={OPT}/venv")
    run_on(lab, head, f"cd {OPT}/xx && {env} {OPT}/fleet-uv-warm . && "
                      f"{env} UV_OFFLINE=1 {OPT}/uv sync --frozen")
    export = lab.pillar("compute")["compute"]["codesync"]["export"]
    # stand-in (see the docstring): only where the head has no /code.nfs of its own
    run_on(lab, head, f'[ -e /code.nfs ] || ln -sn {export} /code.nfs')
    dest = r.codedir.removeprefix("/code.nfs/")
    out = run_on(lab, head, f"rsync -a --mkpath --stats --copy-dest=/xx {OPT}/xx/ "
                            f"{r.url}/{dest}/")
    assert "Number of regular files transferred:" in out


def prepare_worker(r: Rig, node: str) -> None:
    """The task user's uv cache warmed for the job's lock from the site cache (the step
    before a lock's first job), the worker's own venv synced offline from it, the shim;
    the worker started as a transient unit with the role's env file."""
    lab = r.lab
    env = run_on(lab, node, f"cat {ENV}")
    if "UV_OFFLINE=1\n" not in env or f"FLEET_PYCACHE_URL={r.pycache}\n" not in env:
        pytest.fail(f"{node}: {ENV} does not keep uv offline on the site cache:\n{env}")
    copy_in(lab, node, ROOT / "tests" / "lab" / "miniray_shim.py", f"{OPT}/shim.py")
    # the task user: TASK_UID of worker.env, as whom miniray's worker syncs the task venvs
    user, task_home = run_on(lab, node, f". {ENV} && getent passwd $TASK_UID | "
                                        "cut -d: -f1,6").strip().split(":")
    cache = f"{task_home}/.cache/uv"
    body = f"set -a; . {ENV}; set +a; export UV_CACHE_DIR={cache}; fleet-uv-warm {r.codedir}"
    run_on(lab, node, f"runuser -u {shlex.quote(user)} -- sh -c {shlex.quote(body)}")
    run_on(lab, node, f"set -a; . {ENV}; set +a; export UV_CACHE_DIR={OPT}/uv-cache "
                      f"UV_PROJECT_ENVIRONMENT={OPT}/venv; fleet-uv-warm {r.codedir} && "
                      f"uv sync --frozen --project {r.codedir}")
    run_on(lab, node, " ".join([
        "systemd-run", f"--unit={UNIT}", f"--property=EnvironmentFile={ENV}",
        f"--setenv=UV_CACHE_DIR={cache}",
        f"--setenv=PYTHONPATH={r.codedir}", "--setenv=PYTHONUNBUFFERED=1",
        f"--setenv=MINIRAY_SHIM_UNIT={UNIT}.service", f"--working-directory={r.codedir}",
        f"{OPT}/venv/bin/python", f"{OPT}/shim.py", f"{r.codedir}/miniray/worker.py"]))


def active_workers(r: Rig) -> list[str]:
    out = run_on(r.lab, r.head, f"{OPT}/venv/bin/python -c {shlex.quote(ACTIVE)} "
                                f"{r.redis_host} {shlex.quote(r.queue)}")
    keys: list[str] = json.loads(out)
    return keys


def journal(r: Rig) -> str:
    return "\n".join(podman_exec(r.lab, n, "journalctl", "-u", UNIT, "--no-pager", "-n", "60",
                                 timeout=60).stdout for n in WORKERS)


@pytest.fixture(scope="module")
def outcome(rig: Rig) -> dict[str, Any]:
    want = {f"active:{rig.queue}:{n}" for n in WORKERS}

    def heartbeats() -> bool:
        for node in WORKERS:
            if podman_exec(rig.lab, node, "systemctl", "is-failed", UNIT).returncode == 0:
                pytest.fail(f"the worker on {node} failed:\n{journal(rig)}")
        return want <= set(active_workers(rig))

    poll("both workers' heartbeats in the central Valkey", heartbeats, timeout=120)
    cmd = (f"cd /tmp && PYTHONPATH={OPT}/xx {OPT}/venv/bin/python -c "
           f"{shlex.quote(EXECUTOR)} {rig.redis_host} {shlex.quote(rig.queue)} {rig.codedir}")
    r = podman_exec(rig.lab, rig.head, "bash", "-c", cmd, timeout=900)
    if r.returncode:
        pytest.fail(f"the executor exited {r.returncode}:\n{r.stderr[-4000:]}\n"
                    f"worker journals:\n{journal(rig)}")
    result: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"[miniray] map of 20: {result['map_s']:.1f}s, raised error: "
          f"{result['boom_s']:.1f}s, timeout: {result['timeout_s']:.1f}s\n"
          f"[miniray] map: {result['map']}\n[miniray] raised: {result['boom']}\n"
          f"[miniray] timeout: {result['timeout']}")
    return result


def test_results_come_back_from_both_workers(outcome: dict[str, Any]) -> None:
    assert [r[0] for r in outcome["map"]] == [x * x for x in range(20)]
    assert {r[1] for r in outcome["map"]} == set(WORKERS)


def test_a_raised_error_surfaces_with_its_worker(outcome: dict[str, Any]) -> None:
    boom = outcome["boom"]
    assert boom.get("type") == "ValueError" and boom.get("worker") in WORKERS, boom
    assert "ValueError" in boom["desc"] and "boom 7" in boom["desc"], boom


def test_a_timeout_surfaces_as_timeout_error(outcome: dict[str, Any]) -> None:
    timeout = outcome["timeout"]
    assert timeout.get("type") == "TimeoutError", timeout
    assert timeout.get("worker") in WORKERS, timeout


def test_a_stopped_worker_leaves_the_queue(rig: Rig, outcome: dict[str, Any]) -> None:
    run_on(rig.lab, WORKERS[1], f"systemctl stop {UNIT}")
    gone = f"active:{rig.queue}:{WORKERS[1]}"
    poll("the stopped worker's heartbeat to expire", lambda: gone not in active_workers(rig),
         timeout=30)
    assert f"active:{rig.queue}:{WORKERS[0]}" in active_workers(rig)
