"""A real miniray job end to end in the lab: an executor on the head node submits to the
central Valkey (compute.valkey), two workers (compute.worker containers) run the tasks,
and the results, a raised error and a timeout come back to the executor.

miniray is not part of fleet and not on PyPI: the test takes it only from a checkout named
by ``FLEET_MINIRAY_SRC`` (e.g. ``git -C MINIRAY archive HEAD | tar -x -C /tmp/miniray``)
and skips, saying so, without it. Nothing of miniray is written into this repository: the
job tree is built under the lab's own directory (.lab/miniray-test/).

The job's code reaches the workers through the code sync: the head pushes a monorepo-like
tree (a ``fleet-lab-xx`` uv project whose ``miniray/`` is the checkout) to the rsync
module ``code_nfs`` as a per-job copy (``--copy-dest=/xx``, as miniray's
``use_local_codedir``), and the workers read it at ``/code.nfs/branches/caches/<job>/xx``.
Each task's venv is miniray's own ``uv sync --frozen`` of that directory, offline.

Stand-ins and test-only parts, named:
- ``/code.nfs`` on the workers is a read-only bind mount of the export (the lab's kernel
  has no NFS client; fleet/lab/nodes.py); on the head, where the export lives, the test
  links ``/code.nfs`` to it for the duration (miniray's executor checks that the codedir
  exists on the submitting host).
- The packages come from a TEST-ONLY WHEELHOUSE: ``pip download`` on this host of
  miniray's dependencies for CPython 3.12 (containers cannot reach PyPI), copied into the
  head and the workers at ``/opt/fleet-test-miniray/wheelhouse``; the job project names
  it as its only index (uv ``find-links``, ``no-index``), locked on the head with
  ``uv lock --offline`` (uv: the binary compute.worker installs, copied to the head).
- The worker runs under a TEST-ONLY cgroup SHIM (tests/lab/miniray_shim.py: this host
  has cgroup v1), started with ``systemd-run`` as a transient unit with the role's
  environment file (/etc/fleet/miniray/worker.env) and ``UV_OFFLINE=1``; in production
  it runs as a requeued Slurm job on the preemptible partition. The shim also lets the
  worker go on where raising its own priority is refused (no CAP_SYS_NICE in a lab
  container) and run CPU-only where NVML finds the driver's library but no GPU (the lab's
  GPU containers). The task slots are the role's real procNNN users and groups.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from labtools import ROOT, Lab, node_ids, podman_exec, poll

from fleet.lab import podman as pm

SRC_ENV = "FLEET_MINIRAY_SRC"
OPT = "/opt/fleet-test-miniray"
WHEELHOUSE = f"{OPT}/wheelhouse"
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


def build_wheelhouse(deps: list[str], dest: Path) -> None:
    """The TEST-ONLY wheelhouse: miniray's dependencies as CPython 3.12 x86_64 wheels."""
    shutil.rmtree(dest, ignore_errors=True)
    platforms = ["manylinux_2_39_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64",
                 "manylinux2014_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64", "any"]
    argv = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
            "--python-version", "3.12", "--implementation", "cp", "--abi", "cp312",
            "--abi", "abi3", "--abi", "none", *(f"--platform={p}" for p in platforms),
            "-d", str(dest), *deps]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if r.returncode:
        pytest.fail(f"the test wheelhouse could not be built (pip download): {r.stderr[-3000:]}")


def build_tree(src: Path, deps: list[str], dest: Path) -> None:
    """A monorepo-like job tree: a virtual uv project with miniray's dependencies, from
    the test wheelhouse only, and the miniray checkout as its ``miniray/``."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest / "miniray", symlinks=True,
                    ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__"))
    (dest / "pyproject.toml").write_text("\n".join([
        "# written by tests/lab/test_miniray.py: a stand-in for a monorepo with miniray",
        "[project]", 'name = "fleet-lab-xx"', 'version = "0"',
        'requires-python = "==3.12.*"',  # the wheelhouse's wheels are cp312
        f"dependencies = {json.dumps(deps)}", "", "[tool.uv]", "package = false",
        "no-index = true", f'find-links = ["{WHEELHOUSE}"]',
        "environments = [\"sys_platform == 'linux' and platform_machine == 'x86_64'\"]", ""]))


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
            f"rsync://{comp['codesync']['bind']}:{comp['codesync']['port']}/code_nfs")
    work = lab.paths.lab / "miniray-test"
    deps = miniray_deps(src)
    build_wheelhouse(deps, work / "wheelhouse")
    build_tree(src, deps, work / "xx")
    try:
        prepare_head(r, work)
        for node in WORKERS:
            prepare_worker(r, node, work)
        yield r
    finally:
        for node in WORKERS:
            podman_exec(lab, node, "bash", "-c", f"systemctl stop {UNIT}; "
                        f"systemctl reset-failed {UNIT}; rm -rf {OPT}")
        export = comp["codesync"]["export"]
        podman_exec(lab, head, "bash", "-c", f"rm -rf {OPT} {export}/branches/caches/{job}; "
                    f'[ "$(readlink /code.nfs)" != {export} ] || rm /code.nfs')


def prepare_head(r: Rig, work: Path) -> None:
    """uv from a worker, the wheelhouse and the tree on the head; the tree locked
    offline, the executor's venv synced from it, and the tree pushed to the code sync."""
    lab, head = r.lab, r.head
    uv = run_on(lab, WORKERS[0], "readlink -f $(command -v uv)").strip()
    pm.podman(lab.paths, "cp", f"{lab.plan.node(WORKERS[0]).container}:{uv}",
              str(work / "uv"))
    copy_in(lab, head, work / "uv", f"{OPT}/uv")
    copy_in(lab, head, work / "wheelhouse", WHEELHOUSE)
    copy_in(lab, head, work / "xx", f"{OPT}/xx")
    env = f"UV_OFFLINE=1 UV_CACHE_DIR={OPT}/uv-cache UV_PROJECT_ENVIRONMENT={OPT}/venv"
    run_on(lab, head, f"cd {OPT}/xx && {env} {OPT}/uv lock && {env} {OPT}/uv sync --frozen")
    export = lab.pillar("compute")["compute"]["codesync"]["export"]
    # stand-in (see the docstring): only where the head has no /code.nfs of its own
    run_on(lab, head, f'[ -e /code.nfs ] || ln -sn {export} /code.nfs')
    dest = r.codedir.removeprefix("/code.nfs/")
    out = run_on(lab, head, f"rsync -a --mkpath --stats --copy-dest=/xx {OPT}/xx/ "
                            f"{r.url}/{dest}/")
    assert "Number of regular files transferred:" in out


def prepare_worker(r: Rig, node: str, work: Path) -> None:
    """The wheelhouse, the worker's own venv (synced from the job tree on /code.nfs) and
    the shim; the worker started as a transient unit with the role's env file."""
    lab = r.lab
    copy_in(lab, node, work / "wheelhouse", WHEELHOUSE)
    copy_in(lab, node, ROOT / "tests" / "lab" / "miniray_shim.py", f"{OPT}/shim.py")
    env = f"UV_OFFLINE=1 UV_CACHE_DIR={OPT}/uv-cache UV_PROJECT_ENVIRONMENT={OPT}/venv"
    run_on(lab, node, f"{env} uv sync --frozen --project {r.codedir}")
    task_home = run_on(lab, node, ". /etc/fleet/miniray/worker.env && "
                                  "getent passwd $TASK_UID | cut -d: -f6").strip()
    run_on(lab, node, " ".join([
        "systemd-run", f"--unit={UNIT}", "--property=EnvironmentFile=/etc/fleet/miniray/worker.env",
        f"--setenv=UV_CACHE_DIR={task_home}/.cache/uv", "--setenv=UV_OFFLINE=1",
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
