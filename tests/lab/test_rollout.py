"""`fleet rollout` in the lab: the real CLI across the three GPU nodes
(tbox-001, tbox-002 in partition tbox1, tbox-039 in tbox2) against the lab's Salt master
and head-01's slurmctld, applying `base.time` (quick, and a real state.apply).

- With a job running on tbox-001 and `--wave 2`: tbox-001 waits (draining) for its job,
  tbox-002 and tbox-039 are drained, applied, health-checked and resumed meanwhile; the
  job ends only when the test releases it, after both are back in service (no fixed
  sleep to outlast them); every node ends idle.
- A node made to fail (slurmd stopped on tbox-039: its health gate fails) stops the
  rollout: `--wave 1` puts tbox-001 and tbox-039 in wave 1, so tbox-002 is never
  touched; tbox-039 is left drained with the failure as the reason; after the fix
  `--resume` finishes the rollout.

- `--reboot` of tbox-002 through its FAKE Redfish BMC (sushy-tools' emulator, as in the
  lab reinstall tests) and the FAKE hardware behind it (tests/lab/fake_lab_hardware.py:
  a reset with the node's boot mode local restarts its container, the lab's boot from
  disk): the rollout waits for the minion to answer from the new boot (PID 1 started
  anew), then the health gate, then resumes the node.

Everything broken here is restored in `finally` blocks (slurmd started, jobs cancelled,
an unfinished rollout aborted, the nodes resumed)."""

from __future__ import annotations

import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from labtools import ROOT, Lab, fleet_json, podman_exec, poll, sinfo_node
from reinstall_rig import CONTROLLER, PODMAN, rig_up

HEAD, BUSY, OTHER, FAILING = "head-01", "tbox-001", "tbox-002", "tbox-039"
GPUS = (BUSY, OTHER, FAILING)
RELEASE = "/run/rollout-busy.release"  # on BUSY: the busy job ends once this exists


def fleet_rollout(lab: Lab, state: Path, *args: str, timeout: float = 900
                  ) -> tuple[int, dict[str, Any], str]:
    proc, report = fleet_json(lab, "rollout", state, *args, "--reinstall-state-dir",
                              str(state.parent / "reinstall"), timeout=timeout, empty_ok=True)
    return proc.returncode, report, proc.stderr


def head(lab: Lab, *argv: str) -> subprocess.CompletedProcess[str]:
    return podman_exec(lab, HEAD, *argv, timeout=120)


def slurm_state(lab: Lab, node: str) -> str:
    return sinfo_node(lab, node, "%T")


def reason(lab: Lab, node: str) -> str:
    return sinfo_node(lab, node, "%E")


def journal(state: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (state / "journal.jsonl").read_text().splitlines()]


def step_end(entries: list[dict[str, Any]], node: str, step: str) -> dict[str, Any]:
    return [e for e in entries if e["event"] == "step" and e.get("node") == node
            and e.get("step") == step and e.get("phase") == "end"][-1]


def _ended(entries: list[dict[str, Any]], node: str, step: str) -> bool:
    return any(e["event"] == "step" and e.get("node") == node and e.get("step") == step
               and e.get("phase") == "end" for e in entries)


def restore(lab: Lab, state: Path) -> None:
    head(lab, "scancel", "-n", "rollout-busy")
    podman_exec(lab, FAILING, "systemctl", "start", "slurmd")
    if (state / "journal.jsonl").exists():
        fleet_rollout(lab, state, "--abort")
    for n in GPUS:
        if "drain" in slurm_state(lab, n):
            head(lab, "scontrol", "update", f"NodeName={n}", "State=RESUME")
    poll("the GPU nodes idle again", lambda: all(slurm_state(lab, n) == "idle"
                                                 for n in GPUS), timeout=180)


def settle(lab: Lab) -> None:
    """The known start: the GPU nodes idle. A drain left by an earlier lab test (a
    reinstall's failure cases leave tbox-039 drained by design) is resumed, and said."""
    for n in GPUS:
        if "drain" in slurm_state(lab, n):
            print(f"[rollout test] {n} was drained ({reason(lab, n)}): resumed first")
            head(lab, "scontrol", "update", f"NodeName={n}", "State=RESUME")
    poll("the GPU nodes idle", lambda: all(slurm_state(lab, n) == "idle" for n in GPUS),
         timeout=180)


def test_busy_node_waits_for_its_job_while_the_others_proceed(
        lab: Lab, tmp_path: Path) -> None:
    state = tmp_path / "state"
    try:
        settle(lab)
        podman_exec(lab, BUSY, "rm", "-f", RELEASE)
        job = head(lab, "sbatch", "--parsable", "-p", "tbox1", "-w", BUSY, "-J",
                   "rollout-busy", "--wrap", f"while [ ! -e {RELEASE} ]; do sleep 1; done")
        assert job.returncode == 0, job.stderr
        job_id = job.stdout.strip().split(";")[0]
        poll("the job to run", lambda: head(lab, "squeue", "-h", "-j", job_id, "-o",
                                            "%T").stdout.strip() == "RUNNING", timeout=120)
        with ThreadPoolExecutor(1) as pool:
            run = pool.submit(fleet_rollout, lab, state, "tbox-*", "--states", "base.time",
                              "--wave", "2")

            def others_resumed() -> bool:
                if run.done():  # ended early: its report says why, below
                    return True
                try:  # a line may be half written while the rollout runs
                    entries = journal(state)
                except (OSError, ValueError):
                    return False
                return all(_ended(entries, n, "resume") for n in (OTHER, FAILING))

            poll("the two other nodes back in service while the busy one waits",
                 others_resumed, timeout=900)
            assert not run.done(), "the rollout ended while its busy node's job still ran"
            assert slurm_state(lab, BUSY).rstrip("*") in ("draining", "mixed", "allocated"), \
                slurm_state(lab, BUSY)
            podman_exec(lab, BUSY, "touch", RELEASE)  # the job ends
            rc, rep, err = run.result()
        assert rc == 0, (rep, err[-3000:])
        assert rep["outcome"] == "done" and rep["waves"] == [[BUSY, OTHER, FAILING]]
        nodes = {n["node"]: n for n in rep["nodes"]}
        assert all(n["outcome"] == "done" for n in nodes.values())
        assert "after waiting" in nodes[BUSY]["steps"]["drain"]["detail"]
        entries = journal(state)
        busy_drained = step_end(entries, BUSY, "drain")["ts"]
        for n in (OTHER, FAILING):  # back in service while the busy node still waited
            assert step_end(entries, n, "resume")["ts"] < busy_drained
            assert "after waiting" not in nodes[n]["steps"]["drain"]["detail"]
        for n in GPUS:
            assert step_end(entries, n, "apply")["outcome"] == "ok"
            assert step_end(entries, n, "health")["detail"] == "healthy"
        poll("every GPU node idle", lambda: all(slurm_state(lab, n) == "idle" for n in GPUS),
             timeout=60)
        (ROOT / ".lab" / "rollout-wave.json").write_text(json.dumps(rep, indent=2))
    finally:
        podman_exec(lab, BUSY, "touch", RELEASE)
        restore(lab, state)
        podman_exec(lab, BUSY, "rm", "-f", RELEASE)


def test_a_failing_node_stops_the_rollout_drained_then_resume(
        lab: Lab, tmp_path: Path) -> None:
    state = tmp_path / "state"
    try:
        settle(lab)
        assert podman_exec(lab, FAILING, "systemctl", "stop", "slurmd").returncode == 0
        rc, rep, err = fleet_rollout(lab, state, "tbox-*", "--states", "base.time",
                                     "--wave", "1", "--health-timeout", "20")
        assert rc == 5, (rep, err[-3000:])
        assert rep["outcome"] == "failed"
        assert rep["waves"] == [[BUSY, FAILING], [OTHER]]
        nodes = {n["node"]: n for n in rep["nodes"]}
        assert nodes[FAILING]["failed_step"] == "health"
        assert "slurmd.service: inactive (dead)" in nodes[FAILING]["message"]
        assert nodes[BUSY]["outcome"] == "done"
        assert OTHER not in nodes  # the next wave never started
        assert slurm_state(lab, OTHER) == "idle"
        assert slurm_state(lab, FAILING).rstrip("*") in ("drained", "draining")
        why = reason(lab, FAILING)
        assert why.startswith(f"fleet rollout ({rep['run']}) failed at health: health: ")
        assert FAILING in rep["left"]
        # an unfinished rollout refuses a new one
        rc, _rep, err = fleet_rollout(lab, state, "tbox-*")
        assert rc == 6 and "--resume or --abort" in err, err

        assert podman_exec(lab, FAILING, "systemctl", "start", "slurmd").returncode == 0
        rc, rep, err = fleet_rollout(lab, state, "--resume")
        assert rc == 0, (rep, err[-3000:])
        (ROOT / ".lab" / "rollout-resume.json").write_text(json.dumps(rep, indent=2))
        assert rep["outcome"] == "done"
        assert {n["node"] for n in rep["nodes"]} == {FAILING, OTHER}
        poll("every GPU node idle", lambda: all(slurm_state(lab, n) == "idle" for n in GPUS),
             timeout=60)
    finally:
        restore(lab, state)


def pid1_start(lab: Lab, node: str) -> str:
    """PID 1's start time in the node's container (clock ticks after the host's boot)."""
    res = podman_exec(lab, node, "cut", "-d", " ", "-f", "22", "/proc/1/stat")
    assert res.returncode == 0 and res.stdout.strip().isdigit(), res.stderr
    return res.stdout.strip()


def test_reboot_through_the_fake_bmc_waits_for_the_new_boot(lab: Lab, tmp_path: Path) -> None:
    state = tmp_path / "state"
    try:
        settle(lab)
        before = pid1_start(lab, OTHER)
        with rig_up(lab, tmp_path / "rig") as rig:
            rc, rep, err = fleet_rollout(
                lab, state, OTHER, "--states", "base.time", "--reboot",
                # under the rig's own limit: a node that never comes back is the
                # rollout's failed step in its report, not a killed process
                "--boot-timeout", "600",
                "--secrets", str(rig.work / "secrets"), "--bmc-scheme", "http",
                "--bmc-address", f"127.0.0.1:{rig.bmc_ports[OTHER]}",
                # --reboot reads the node's PXE boot mode where head-01 keeps it
                "--pxe-command",
                f"{PODMAN} -i {lab.plan.node(CONTROLLER).container} fleet-lab")
            events = [e["event"] for e in rig.hardware(OTHER)]
        assert rc == 0, (rep, err[-3000:])
        (ROOT / ".lab" / "rollout-reboot.json").write_text(json.dumps(rep, indent=2))
        [node] = rep["nodes"]
        assert node["outcome"] == "done", node
        assert [s for s in ("drain", "apply", "reboot", "health", "resume")
                if s not in node["steps"]] == []
        assert re.search(r": power reset \(\w+\); back after \d+s$",
                         node["steps"]["reboot"]["detail"]), node
        # the BMC's reset reached the FAKE hardware, which booted the node from its disk
        assert "power-boot" in events and "booted-disk" in events, events
        assert pid1_start(lab, OTHER) != before  # a new boot, not a slow answer
        assert step_end(journal(state), OTHER, "health")["detail"] == "healthy"
        poll(f"{OTHER} idle", lambda: slurm_state(lab, OTHER) == "idle", timeout=60)
    finally:
        restore(lab, state)
