"""A real miniray job end to end in the lab, its workers run as the site runs them: an
executor on the head node submits to the central Valkey (compute.valkey), two workers run
the tasks, and the results, a raised error and a timeout come back to the executor. Each
worker is the rendered job script of compute.worker (/etc/fleet/miniray/worker.sbatch,
unchanged) submitted with ``sbatch`` on its node to the lab's real Slurm (slurmctld on
head-01, the workers' preemptible partition); a worker killed as the kernel's OOM killer
kills (SIGKILL) ends its job script, which requeues its own job: Slurm starts it again
(Restarts=1) and the worker serves tasks again; a cancelled job's worker leaves the queue.

miniray is not part of fleet and not on PyPI: the test takes it only from a checkout named
by ``FLEET_MINIRAY_SRC`` (e.g. ``git -C MINIRAY archive HEAD | tar -x -C /tmp/miniray``)
and skips, saying so, without it. Nothing of miniray is written into this repository: its
tar and the job tree are built under the lab's own directory (.lab/).

The workers' miniray is installed as a site's pin is: the checkout packed as
``git archive --prefix=miniray/`` packs it (.lab/artifacts, which the compute nodes mount
at /srv/fleet/artifacts), and compute.worker applied on the two workers with that tar
and its sha256 as compute.worker.miniray (a pillar override of the lab's STAND-IN pin):
the tar checked, unpacked into /opt/fleet/miniray/<sha256>, its venv synced offline
from the site cache with miniray's own uv.lock, ``current`` linked to it. The teardown
applies compute.worker again without the override (``current`` back to the stand-in).

The job's code reaches the workers through the code sync: the head pushes a monorepo-like
tree (a virtual ``fleet-lab-xx`` uv project whose ``miniray/`` is the checkout) to the
rsync module ``code_nfs`` as a per-job copy (``--copy-dest=/xx``, as miniray's
``use_local_codedir``), and the workers read it at ``/code.nfs/branches/caches/<job>/xx``.

Its packages take the production path (docs/operations.md, Python package cache): the
tree is locked on this host against PyPI with the pinned uv (the lab's compute.uv wheel,
checked against its sha256), head-01's site cache is filled from that lock and miniray's
(labtools.fill_site_cache), each worker's task user warms its uv cache for the lock with
``fleet-uv-warm <codedir>`` (worker.env in the environment; the job script points the
worker's UV_CACHE_DIR at that cache), and each task's venv is miniray's own unmodified
``uv sync --frozen`` of the codedir, offline (``UV_OFFLINE=1`` from worker.env). The
executor's venv on the head is synced the same way, from the site cache.

Stand-ins and test-only parts, named:
- ``/code.nfs`` on the workers is a read-only bind mount of the export (the lab's kernel
  has no NFS client; fleet/lab/nodes.py); on the head, where the export lives, the test
  links ``/code.nfs`` to it for the duration (miniray's executor checks that the codedir
  exists on the submitting host).
- The fill runs on this host and its tree is copied into head-01's cache (the lab's
  containers cannot reach PyPI; labtools.fill_site_cache). The head has no compute.worker
  role: it gets the pinned uv and fleet-uv-warm (the role's template, uv's path filled
  in) under /opt/fleet-test-miniray for the executor's venv.
- The worker runs under a TEST-ONLY CGROUP SHIM, because this host is cgroup v1 (miniray
  needs a delegated cgroup v2 subtree: the site's slurm role delegates one, proven in the
  VM tier): tests/lab/miniray_shim.py, armed by a ``sitecustomize`` in
  /opt/fleet-test-miniray/shim that the job inherits from its submitter's environment
  (sbatch's default ``--export=ALL``): ``PYTHONPATH=/opt/fleet-test-miniray/shim
  PYTHONUNBUFFERED=1 sbatch worker.sbatch``, the only difference from the site's
  submission (unbuffered: the job's log line by line for this test's failure messages;
  ``--export=ALL,VAR=...`` is not used: the lab's slurmd 23.11 dies of it, ``fatal:
  clone: Operation not permitted`` in an unprivileged container). The shim installs
  itself only in a ``worker.py`` (each task's PYTHONPATH is the job's codedir); it also
  lets the worker go on where raising its own priority is refused (no CAP_SYS_NICE in a
  lab container) and run CPU-only where NVML finds the driver's library but no GPU (the
  lab's GPU containers). The task slots are the role's real procNNN users and groups.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from labtools import ROOT, Lab, fill_site_cache, node_ids, podman_exec, poll
from miniray_shim import SITECUSTOMIZE

from fleet.lab import podman as pm
from support import miniray
from support.miniray import (
    ENV,
    MINIRAY_DIR,
    PYTHON,
    SCRIPT,
    SKIP_REASON,
    SRC_ENV,
    WARM,
    build_tree,
    pack_miniray,
    uv_from_wheel,
    warm_task_cache,
)

OPT = "/opt/fleet-test-miniray"
WORKERS = node_ids("slurm.compute")[:2]  # compute.worker and codesync.client too
CONTROLLER = node_ids("slurm.controller")[0]
# the test-only part of the submission (see the docstring): the cgroup shim's directory
# in the submitter's environment, which the job inherits (sbatch's default --export=ALL)
SHIM_ENV = f"PYTHONPATH={OPT}/shim PYTHONUNBUFFERED=1"

if not os.environ.get(SRC_ENV):
    pytest.skip(SKIP_REASON, allow_module_level=True)

# What the executor runs on the head (the venv's python, PYTHONPATH: the local tree):
# argv[4] "all": a map, a raised error and a timeout; "map": the map only.
EXECUTOR = r"""
import json, socket, sys, time
from miniray import Executor, Limits, MinirayError
redis_host, queue, codedir, what = sys.argv[1:5]
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
if what == "all":
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

# the pids of a job's worker.py, as its job script starts it (cwd: miniray's tree)
WORKER_PIDS = r"""
for d in /proc/[0-9]*; do
  [ "$(tr '\0' ' ' < $d/cmdline 2>/dev/null)" = "./.venv/bin/python worker.py " ] &&
    tr '\0' '\n' < $d/environ 2>/dev/null | grep -qx "SLURM_JOB_ID=$1" && echo ${d#/proc/}
done
true
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
    tree: str = ""  # miniray's installed tree on the workers (/opt/fleet/miniray/<sha256>)
    jobs: dict[str, str] = field(default_factory=dict)  # worker node -> its Slurm job


def run_on(lab: Lab, node: str, cmd: str, timeout: float = 300) -> str:
    r = podman_exec(lab, node, "bash", "-c", cmd, timeout=timeout)
    if r.returncode:
        pytest.fail(f"{node}: `{cmd[:300]}` exited {r.returncode}:\n{r.stdout[-3000:]}\n"
                    f"{r.stderr[-3000:]}")
    return r.stdout


def copy_in(lab: Lab, node: str, src: Path, dest: str) -> None:
    run_on(lab, node, f"mkdir -p {shlex.quote(str(Path(dest).parent))}")
    pm.podman(lab.paths, "cp", str(src), f"{lab.plan.node(node).container}:{dest}")


def pinned_uv(lab: Lab, work: Path) -> Path:
    """The uv binary of the lab's compute.uv wheel (.lab/artifacts): the uv the workers
    run."""
    pin = lab.pillar("compute")["compute"]["uv"]
    wheel = lab.paths.lab / "artifacts" / pin["source"].rsplit("/", 1)[1]
    return uv_from_wheel(wheel, pin["sha256"], work / "uv")


def apply_worker(lab: Lab, pin: dict[str, str] | None) -> dict[str, Any]:
    """compute.worker applied on the two workers, with ``pin`` as compute.worker.miniray
    (None: the lab's own pin); fails naming each state that did not succeed."""
    args = ["-L", ",".join(WORKERS), "state.apply", "compute.worker", "-t", "1200"]
    if pin is not None:
        args.append("pillar=" + json.dumps({"compute": {"worker": {"miniray": pin}}}))
    out: dict[str, Any] = lab.salt(*args, timeout=1500)
    for node in WORKERS:
        ret = out.get(node)
        if not isinstance(ret, dict):
            pytest.fail(f"compute.worker on {node}: {ret!r}")
        bad = {k: v.get("comment") for k, v in ret.items() if v.get("result") is not True}
        if bad:
            pytest.fail(f"compute.worker on {node} failed: {json.dumps(bad)[-4000:]}")
    return out


@pytest.fixture(scope="module")
def rig(lab: Lab) -> Iterator[Rig]:
    src = miniray.source()
    assert src is not None
    comp = lab.pillar("compute")["compute"]
    head = comp["codesync"]["host"]
    job = f"fleet-lab-{uuid.uuid4().hex[:12]}"
    r = Rig(lab, head, lab.pillar(f"nodes/{WORKERS[0]}")["node"]["compute"]["redis_host"],
            comp["worker"]["queue"], f"/code.nfs/branches/caches/{job}/xx",
            f"rsync://{comp['codesync']['bind']}:{comp['codesync']['port']}/code_nfs", "")
    work = lab.paths.lab / "miniray-test"
    work.mkdir(parents=True, exist_ok=True)
    uv = pinned_uv(lab, work)
    build_tree(src, work / "xx", uv)
    r.pycache = fill_site_cache(lab, work / "xx" / "uv.lock", src / "uv.lock",
                                python=(PYTHON,))
    tar = lab.paths.lab / "artifacts" / "miniray-test.tar"  # /srv/fleet/artifacts on nodes
    sha = pack_miniray(src, tar)
    r.tree = f"{MINIRAY_DIR}/{sha}"
    try:
        apply_worker(lab, {"source": f"/srv/fleet/artifacts/{tar.name}", "sha256": sha})
        prepare_head(r, work, uv)
        for node in WORKERS:
            prepare_worker(r, node)
        yield r
    finally:
        for job_id in r.jobs.values():
            podman_exec(lab, CONTROLLER, "scancel", job_id)
        for job_id in r.jobs.values():
            poll(f"job {job_id} gone from the queue", lambda j=job_id: not podman_exec(
                lab, CONTROLLER, "squeue", "-h", "-j", j, "-t", "PD,R,CG").stdout.strip(),
                timeout=120)
        for node in WORKERS:
            podman_exec(lab, node, "rm", "-rf", OPT)
        export = comp["codesync"]["export"]
        podman_exec(lab, head, "bash", "-c", f"rm -rf {OPT} {export}/branches/caches/{job}; "
                    f'[ "$(readlink /code.nfs)" != {export} ] || rm /code.nfs')
        apply_worker(lab, None)  # `current` back to the lab's own pin


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
    """The installed tree checked (miniray's, linked as current), the task user's uv cache
    warmed for the job's lock from the site cache (the step before a lock's first job),
    the shim's directory; then the rendered job script submitted on its node."""
    lab = r.lab
    env = run_on(lab, node, f"cat {ENV}")
    if "UV_OFFLINE=1\n" not in env or f"FLEET_PYCACHE_URL={r.pycache}\n" not in env:
        pytest.fail(f"{node}: {ENV} does not keep uv offline on the site cache:\n{env}")
    assert run_on(lab, node, f"readlink {MINIRAY_DIR}/current").strip() == r.tree
    run_on(lab, node, f"cmp {r.tree}/executor.py {r.codedir}/miniray/executor.py && "
                      f"test -x {r.tree}/.venv/bin/python")
    script = run_on(lab, node, f"cat {SCRIPT}")
    assert "#SBATCH --requeue\n" in script and f"#SBATCH --nodelist={node}\n" in script, script
    # the task user: TASK_UID of worker.env, as whom miniray's worker syncs the task venvs
    user = run_on(lab, node, f". {ENV} && getent passwd $TASK_UID | cut -d: -f1").strip()
    run_on(lab, node, warm_task_cache(script, user, r.codedir))
    shim = ROOT / "tests" / "lab" / "miniray_shim.py"
    copy_in(lab, node, shim, f"{OPT}/shim/miniray_shim.py")
    run_on(lab, node, f"printf %s {shlex.quote(SITECUSTOMIZE)} > {OPT}/shim/sitecustomize.py")
    out = run_on(lab, node, f"{SHIM_ENV} sbatch --parsable {SCRIPT}")
    r.jobs[node] = out.strip().split(";")[0]


def job(lab: Lab, job_id: str) -> dict[str, str]:
    """``scontrol show job -o``'s fields of one job ({} once Slurm has forgotten it)."""
    res = podman_exec(lab, CONTROLLER, "scontrol", "show", "job", "-o", job_id)
    return dict(w.split("=", 1) for w in res.stdout.split() if "=" in w)


def log(r: Rig, node: str) -> str:
    """The worker job's log on ``node`` (worker.sbatch's --output)."""
    return podman_exec(r.lab, node, "cat", f"/var/log/slurm/miniray-worker.{node}.log",
                       timeout=60).stdout


def logs(r: Rig) -> str:
    return "\n".join(f"--- {n} (job {r.jobs.get(n)}):\n{log(r, n)[-3000:]}" for n in WORKERS)


def active_workers(r: Rig) -> list[str]:
    out = run_on(r.lab, r.head, f"{OPT}/venv/bin/python -c {shlex.quote(ACTIVE)} "
                                f"{r.redis_host} {shlex.quote(r.queue)}")
    keys: list[str] = json.loads(out)
    return keys


def executor(r: Rig, what: str) -> dict[str, Any]:
    cmd = (f"cd /tmp && PYTHONPATH={OPT}/xx {OPT}/venv/bin/python -c "
           f"{shlex.quote(EXECUTOR)} {r.redis_host} {shlex.quote(r.queue)} {r.codedir} "
           f"{what}")
    res = podman_exec(r.lab, r.head, "bash", "-c", cmd, timeout=900)
    if res.returncode:
        pytest.fail(f"the executor exited {res.returncode}:\n{res.stderr[-4000:]}\n"
                    f"worker jobs' logs:\n{logs(r)}")
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def running(r: Rig, node: str, restarts: int) -> dict[str, str] | None:
    """The job's fields once it runs its ``restarts``-th restart on ``node``; fails at
    once where the job ended."""
    j = job(r.lab, r.jobs[node])
    if j.get("JobState") in (None, "FAILED", "CANCELLED", "COMPLETED", "TIMEOUT", "NODE_FAIL"):
        pytest.fail(f"worker job {r.jobs[node]} on {node}: {j}\n{logs(r)}")
    ok = (j.get("JobState"), j.get("Restarts"), j.get("NodeList")) == \
        ("RUNNING", str(restarts), node)
    return j if ok else None


@pytest.fixture(scope="module")
def outcome(rig: Rig) -> dict[str, Any]:
    for node in WORKERS:
        j = poll(f"worker job {rig.jobs[node]} running on {node}",
                 lambda n=node: running(rig, n, 0), timeout=180)
        assert (j["Partition"], j["Requeue"]) == (
            rig.lab.pillar("compute")["compute"]["worker"]["partition"], "1"), j
    want = {f"active:{rig.queue}:{n}" for n in WORKERS}

    def heartbeats() -> bool:
        for node in WORKERS:
            running(rig, node, 0)
            if "worker exited" in log(rig, node):
                pytest.fail(f"the worker on {node} exited:\n{logs(rig)}")
        return want <= set(active_workers(rig))

    poll("both workers' heartbeats in the central Valkey", heartbeats, timeout=180)
    result = executor(rig, "all")
    print(f"[miniray] map of 20: {result['map_s']:.1f}s, raised error: "
          f"{result['boom_s']:.1f}s, timeout: {result['timeout_s']:.1f}s\n"
          f"[miniray] map: {result['map']}\n[miniray] raised: {result['boom']}\n"
          f"[miniray] timeout: {result['timeout']}")
    return result


def test_the_workers_are_the_rendered_job_script_under_slurm(rig: Rig,
                                                              outcome: dict[str, Any]) -> None:
    """Each worker.py is the installed tree's, started by its job's batch script."""
    for node in WORKERS:
        text = log(rig, node)
        assert re.search(rf"^miniray-worker: job {rig.jobs[node]} restart 0 on {node} ",
                         text, re.MULTILINE), text
        assert "TEST-ONLY cgroup shim installed for worker.py" in text, text
        pids = run_on(rig.lab, node, f"bash -c {shlex.quote(WORKER_PIDS)} _ "
                                     f"{rig.jobs[node]}").split()
        assert len(pids) == 1, pids
        cwd = run_on(rig.lab, node, f"readlink /proc/{pids[0]}/cwd").strip()
        assert cwd == rig.tree, cwd


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


def test_a_cancelled_worker_leaves_the_queue(rig: Rig, outcome: dict[str, Any]) -> None:
    node = WORKERS[1]
    r = podman_exec(rig.lab, CONTROLLER, "scancel", rig.jobs[node])
    assert r.returncode == 0, r.stderr
    gone = f"active:{rig.queue}:{node}"
    poll("the cancelled worker's heartbeat to expire", lambda: gone not in active_workers(rig),
         timeout=60)
    assert f"active:{rig.queue}:{WORKERS[0]}" in active_workers(rig)


def test_a_killed_worker_is_requeued_and_serves_again(rig: Rig,
                                                      outcome: dict[str, Any]) -> None:
    """The worker killed as the OOM killer kills (SIGKILL): its job script requeues its
    job, Slurm starts it again (Restarts=1), and the worker, now the queue's only one
    (the other's job is cancelled above), serves a whole map again."""
    node, job_id = WORKERS[0], rig.jobs[WORKERS[0]]
    pids = run_on(rig.lab, node, f"bash -c {shlex.quote(WORKER_PIDS)} _ {job_id}").split()
    assert len(pids) == 1, pids
    run_on(rig.lab, node, f"kill -KILL {pids[0]}")
    poll(f"job {job_id}'s worker exited 137 and the job requeued itself",
         lambda: re.search(rf"^miniray-worker: job {job_id} worker exited 137 at \S+: "
                           "requeued$", log(rig, node), re.MULTILINE), timeout=60)
    j = poll(f"worker job {job_id} running again after its worker was killed",
             lambda: running(rig, node, 1), timeout=180)
    assert j["Restarts"] == "1" and j["NodeList"] == node, j
    runs = re.findall(rf"^miniray-worker: job {job_id} restart (\d+) on {node} ",
                      log(rig, node), re.MULTILINE)
    assert runs == ["0", "1"], log(rig, node)
    again = executor(rig, "map")
    print(f"[miniray] after the requeue: map of 20 in {again['map_s']:.1f}s")
    assert [x[0] for x in again["map"]] == [x * x for x in range(20)]
    assert {x[1] for x in again["map"]} == {node}
    new = run_on(rig.lab, node, f"bash -c {shlex.quote(WORKER_PIDS)} _ {job_id}").split()
    assert len(new) == 1 and new != pids, (pids, new)
