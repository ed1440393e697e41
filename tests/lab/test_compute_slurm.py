"""The miniray worker as a Slurm job in the lab's real Slurm (slurmctld on head-01, slurmd
on the GPU containers): the job script that compute.worker renders
(/etc/fleet/miniray/worker.sbatch), submitted with sbatch on its node as
docs/operations.md says, runs in the workers' preemptible partition; ``scontrol requeue``
runs it again (Restarts=1); a job of the node's training partition preempts it (requeued,
PENDING, Restarts=2) and runs; the worker runs again when that job ends; a worker that
exits by itself requeues its own job (Restarts=3), which Slurm starts again. Its log, in
the directory logrotate rotates, gets one line per run.

Stand-in, named: the lab's compute.miniray is a STAND-IN tree (lab/miniray-standin:
miniray is on no index; lab/overlay.yaml), installed by compute.worker as a site's pin is
(its tar checked against the sha256, its venv synced from head-01's Python package cache,
``current`` linked); the rendered script is submitted unchanged and runs that tree's
worker.py, which says it is the stand-in and waits like the real worker's loop.
The lab's slurm pillar
(lab/pillar/lab.sls) shortens the wait of a requeued job (10 s; Slurm's 120 s) and the
backfill interval (5 s; 30 s), or each requeue would cost the lab two minutes.
"""

from __future__ import annotations

import re
import shlex
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from labtools import Lab, node_ids, podman_exec, poll, sh

WORKER = node_ids("slurm.compute")[0]
CONTROLLER = node_ids("slurm.controller")[0]
SCRIPT = "/etc/fleet/miniray/worker.sbatch"
LOG = f"/var/log/slurm/miniray-worker.{WORKER}.log"
COMMAND = "./.venv/bin/python worker.py || rc=$?"
# the stand-in worker exits 3 while this file exists (lab/miniray-standin/worker.py)
EXIT_FILE = "/tmp/fleet-test-standin-exit"


def job(lab: Lab, job_id: str) -> dict[str, str]:
    """``scontrol show job -o``'s fields of one job ({} once Slurm has forgotten it)."""
    res = podman_exec(lab, CONTROLLER, "scontrol", "show", "job", "-o", job_id)
    return dict(w.split("=", 1) for w in res.stdout.split() if "=" in w)


def runs(lab: Lab, job_id: str) -> list[str]:
    """The restart counts the worker job's runs wrote to its log, in order."""
    text = sh(lab.host(WORKER), f"cat {LOG}").stdout
    return re.findall(rf"^miniray-worker: job {job_id} restart (\d+) ", text, re.MULTILINE)


def sbatch(lab: Lab, node: str, *argv: str) -> str:
    r = sh(lab.host(node), "sbatch --parsable " + " ".join(shlex.quote(a) for a in argv))
    assert r.rc == 0, f"sbatch on {node}: {r.stderr}"
    return str(r.stdout.strip().split(";")[0])


@pytest.fixture
def worker_job(lab: Lab) -> Iterator[str]:
    """The rendered worker script, submitted unchanged on its node: it runs the installed
    (stand-in) tree."""
    comp = lab.plan.inventory.raw.compute
    if comp is None:
        pytest.skip("this lab has no compute section (debian-12 lab: no Python 3.12 for "
                    "miniray; lab/os/debian-12.yaml): no workers' partition to test")
    h = lab.host(WORKER)
    script = h.file(SCRIPT).content_string
    assert f"#SBATCH --partition={comp.partition}\n" in script, script
    assert COMMAND in script.splitlines(), script
    assert comp.miniray is not None
    tree = f"/opt/fleet/miniray/{comp.miniray.sha256}"
    assert sh(h, "readlink /opt/fleet/miniray/current").stdout.strip() == tree
    sh(h, f"rm -f {EXIT_FILE}")
    job_id = sbatch(lab, WORKER, SCRIPT)
    try:
        yield job_id
    finally:
        podman_exec(lab, CONTROLLER, "scancel", job_id)
        sh(h, f"rm -f {EXIT_FILE}")
        poll(f"job {job_id} gone from the queue and {WORKER} idle", lambda: "idle" in
             sh(lab.host(CONTROLLER), f"sinfo -h -N -n {WORKER} -o %T").stdout.split()
             and not sh(lab.host(CONTROLLER), f"squeue -h -j {job_id} -t PD,R,CG").stdout,
             timeout=120)


def running(lab: Lab, job_id: str, restarts: int) -> dict[str, str] | None:
    j = job(lab, job_id)
    ok = j.get("JobState") == "RUNNING" and j.get("Restarts") == str(restarts)
    return j if ok and runs(lab, job_id)[-1:] == [str(restarts)] else None


def test_the_worker_job_is_requeued_and_preempted(lab: Lab, worker_job: str) -> None:
    comp: Any = lab.plan.inventory.raw.compute
    j = poll(f"worker job {worker_job} running", lambda: running(lab, worker_job, 0),
             timeout=90)
    comp_tree = f"/opt/fleet/miniray/{comp.miniray.sha256}"
    said = poll("the installed worker.py's first line in the job's log", lambda: re.search(
        r"^STAND-IN miniray worker: python (\S+) in (\S+),", sh(
            lab.host(WORKER), f"cat {LOG}").stdout, re.MULTILINE), timeout=60)
    assert said.groups() == (f"{comp_tree}/.venv/bin/python", comp_tree), said[0]
    assert (j["Partition"], j["NodeList"], j["Requeue"]) == (comp.partition, WORKER, "1"), j

    r = podman_exec(lab, CONTROLLER, "scontrol", "requeue", worker_job)
    assert r.returncode == 0, r.stderr
    assert job(lab, worker_job)["JobState"] in ("PENDING", "REQUEUED", "COMPLETING")
    poll(f"worker job {worker_job} running again after scontrol requeue",
         lambda: running(lab, worker_job, 1), timeout=90)

    # a job of the node's own partition (PriorityTier 10) on the same node
    partition = lab.plan.inventory.nodes[WORKER].partition
    assert partition is not None and partition != comp.partition
    done = f"/tmp/fleet-test-training-{uuid.uuid4().hex[:8]}"
    training = sbatch(lab, CONTROLLER, "-p", partition, "-w", WORKER, "-J", "training",
                      "--wrap", f"while [ ! -e {done} ]; do sleep 1; done")
    try:
        def preempted() -> tuple[dict[str, str], dict[str, str]] | None:
            w, t = job(lab, worker_job), job(lab, training)
            ok = (w.get("JobState"), w.get("Restarts"), t.get("JobState")) == \
                ("PENDING", "2", "RUNNING")
            return (w, t) if ok else None

        w, t = poll(f"training job {training} running, worker job {worker_job} requeued",
                    preempted, timeout=90)
        assert t["NodeList"] == WORKER and w["Partition"] == comp.partition, (t, w)
        assert sh(lab.host(WORKER), f"touch {done}").rc == 0  # the training job ends
        poll(f"training job {training} completed",
             lambda: job(lab, training).get("JobState") in ("COMPLETED", None), timeout=60)
    finally:
        podman_exec(lab, CONTROLLER, "scancel", training)
        sh(lab.host(WORKER), f"rm -f {done}")
    poll(f"worker job {worker_job} back after the training job",
         lambda: running(lab, worker_job, 2), timeout=90)
    assert runs(lab, worker_job) == ["0", "1", "2"]

    # the worker exits by itself (its Valkey gone, out of memory: here the stand-in's
    # exit 3): the job script requeues its own job, and Slurm starts it again
    assert sh(lab.host(WORKER), f"touch {EXIT_FILE}").rc == 0
    try:
        poll(f"worker job {worker_job}'s worker exited and the job requeued itself",
             lambda: re.search(rf"^miniray-worker: job {worker_job} worker exited 3 at \S+: "
                               "requeued$", sh(lab.host(WORKER), f"cat {LOG}").stdout,
                               re.MULTILINE), timeout=60)
    finally:
        sh(lab.host(WORKER), f"rm -f {EXIT_FILE}")
    poll(f"worker job {worker_job} back after its worker exited",
         lambda: running(lab, worker_job, 3), timeout=90)
    assert runs(lab, worker_job) == ["0", "1", "2", "3"]
