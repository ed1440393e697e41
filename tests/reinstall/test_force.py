"""``--force`` never powers a node off under jobs: the drain cancels them (scancel, each
named), and power_off refuses a node that still has some; a job of the workers'
preemptible partition is requeued by any drain, never waited for or cancelled. Slurm
cannot run here: a FAKE Slurm (this runner answers scontrol, sinfo, squeue and scancel as
a controller would, its jobs ending once cancelled, a requeued one pending, off the node;
tests/lab/test_compute_slurm.py shows the real one requeue a worker job)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.inventory.load import load_inventory
from fleet.master.keys import MinionKeys
from fleet.reinstall.context import Context, Options, StepFailedError
from fleet.reinstall.steps import drain, power_off
from reinstall.helpers import ROOT, RecordingBootMode
from support.fakeslurm import FakeSlurm

NODE = "tbox-001"  # slurm.compute


def _ctx(tmp_path: Path, slurm: FakeSlurm, **options: float) -> Context:
    inv = load_inventory(ROOT / "inventory.yaml")

    def no_bmc() -> object:
        raise AssertionError("the BMC must not be touched while jobs are on the node")

    return Context(inventory=inv, node=inv.nodes[NODE], state_root=tmp_path, runner=slurm,
                   boot=RecordingBootMode(), bmc=no_bmc,  # type: ignore[arg-type]
                   keys=MinionKeys(slurm, tmp_path / "pki"),
                   options=Options(poll=0.05, **options), say=lambda m: None)


def test_force_cancels_the_nodes_jobs_by_name_before_the_power_off(tmp_path: Path) -> None:
    slurm = FakeSlurm(["4711", "4712_3"])
    detail = drain(_ctx(tmp_path, slurm, force=True, drain_timeout=5))
    assert ("scancel", "4711", "4712_3") in slurm.calls
    assert detail == "--force cancelled job(s) 4711, 4712_3; state drained"
    assert slurm.jobs == []


@pytest.mark.parametrize("force", [False, True])
def test_a_drain_requeues_the_workers_job_and_cancels_it_never(tmp_path: Path,
                                                               force: bool) -> None:
    """tbox-001 is a miniray worker (compute.worker_groups): its worker job never ends by
    itself, so a drain that waited for it would time out, and --force would kill it."""
    slurm = FakeSlurm(["4711"] if force else [], preemptible=["900"])
    detail = drain(_ctx(tmp_path, slurm, force=force, drain_timeout=5))
    assert ("squeue", "-h", "-w", NODE, "-p", "miniray", "-o", "%i") in slurm.calls
    assert ("scontrol", "requeue", "900") in slurm.calls
    assert slurm.pending == ["900"]
    assert detail.startswith("requeued preemptible job(s) 900; ")
    assert not [c for c in slurm.calls if c[0] == "scancel" and "900" in c]
    assert detail.endswith("state drained")


def test_jobs_that_survive_the_cancel_fail_the_drain_named(tmp_path: Path) -> None:
    slurm = FakeSlurm(["4711"], cancel_works=False)
    with pytest.raises(StepFailedError, match=r"job\(s\) 4711 still on it"):
        drain(_ctx(tmp_path, slurm, force=True, drain_timeout=0.3))


def test_power_off_refuses_a_node_with_jobs_naming_them(tmp_path: Path) -> None:
    slurm = FakeSlurm(["4711"])
    with pytest.raises(StepFailedError, match=r"job\(s\) 4711 on tbox-001: not powering it off"):
        power_off(_ctx(tmp_path, slurm))


def test_a_job_id_that_is_not_one_never_reaches_scancel(tmp_path: Path) -> None:
    slurm = FakeSlurm(["4711; reboot"])
    with pytest.raises(LookupError, match="not one"):
        drain(_ctx(tmp_path, slurm, force=True, drain_timeout=1))
    assert not any(c[0] == "scancel" for c in slurm.calls)
