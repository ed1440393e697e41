"""The reinstall's health step (step 8) is the gate of ``fleet health`` and ``fleet
rollout`` (fleet.health): the same checks, on the small inventory, against the fake Salt
master and Slurm controller of tests/health/fakesite.py (a STAND-IN: no master or
slurmctld runs here). A node fails the step for what only the full gate asks (munge, time
sync, units), is drained with the problems as the reason, and is asked again until
--health-timeout before it fails."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from fleet.health import parse
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.master.keys import MinionKeys
from fleet.master.runner import Result
from fleet.reinstall.context import Context, Options, StepFailedError
from fleet.reinstall.steps import health as health_step
from health.fakesite import CHRONY_UNSYNCED, FakeSite
from reinstall.helpers import ROOT, RecordingBootMode

SMALL = ROOT / "tests" / "fixtures" / "small.yaml"
GPU, STOR = "gpu-01", "stor-1"  # gpu-01: nvidia, infiniband, slurm.compute; stor-1: mkv


@pytest.fixture(scope="module")
def inventory() -> Inventory:
    return load_inventory(SMALL)


def make_ctx(inv: Inventory, node: str, site: FakeSite, tmp: Path,
             **options: float) -> tuple[Context, list[str]]:
    said: list[str] = []

    def no_bmc() -> object:
        raise AssertionError("the health check does not use the BMC")

    ctx = Context(inventory=inv, node=inv.nodes[node], state_root=tmp / "state",
                  runner=site, boot=RecordingBootMode(), bmc=no_bmc,  # type: ignore[arg-type]
                  keys=MinionKeys(site, tmp / "pki"),  # type: ignore[arg-type]
                  say=said.append, options=Options(**({"health_timeout": 0.0} | options)))
    return ctx, said


def drains(site: FakeSite) -> list[str]:
    return [c[-1] for c in site.calls if c[:2] == ("scontrol", "update")]


def test_a_healthy_node_passes_the_full_gate(inventory: Inventory, tmp_path: Path) -> None:
    site = FakeSite()
    detail = health_step(make_ctx(inventory, GPU, site, tmp_path)[0])
    for found in ("8 of 8 GPUs", "1 of 1 IB ports active", "munge credential: Success",
                  "slurmd.service"):
        assert found in detail, detail
    assert drains(site) == []
    assert {c[3] for c in site.salt_calls()} >= {"cmd.run_all"}  # one salt -L per check


@pytest.mark.parametrize(("breakage", "named"), [
    ("munge", "munge credential: Expired credential (15)"),
    ("chrony", "not synchronised"),
])
def test_what_only_the_full_gate_asks_fails_the_step_and_drains(
        inventory: Inventory, tmp_path: Path, breakage: str, named: str) -> None:
    """munge (a credential made on the node does not decode) and time sync were not part
    of the reinstall's own gate: a freshly reinstalled node with either broken passed."""
    site = FakeSite()
    if breakage == "munge":
        site.nodes[GPU].munge = "STATUS:          Expired credential (15)\n"
    else:
        site.nodes[GPU].chrony = CHRONY_UNSYNCED
    ctx, _ = make_ctx(inventory, GPU, site, tmp_path)
    with pytest.raises(StepFailedError, match="health check failed: ") as exc:
        health_step(ctx)
    assert named.lower() in str(exc.value).lower()
    [reason] = drains(site)
    assert reason.startswith(f"Reason={ctx.options.reason}: health check failed: ")
    assert named.lower() in reason.lower()


def test_a_stopped_unit_of_a_storage_node_fails(inventory: Inventory, tmp_path: Path) -> None:
    site = FakeSite()
    site.nodes[STOR].units["mkv-volume.service"] = "failed"
    with pytest.raises(StepFailedError, match=r"mkv-volume\.service"):
        health_step(make_ctx(inventory, STOR, site, tmp_path)[0])
    assert drains(site) == []  # not a Slurm node: nothing to drain


def test_no_hardware_skips_the_hardware_checks_and_says_so(inventory: Inventory,
                                                           tmp_path: Path) -> None:
    site = FakeSite()
    site.nodes[GPU].hardware = False
    detail = health_step(make_ctx(inventory, GPU, site, tmp_path)[0])
    assert "skipped" in detail and "GPUs seen" not in detail


def test_the_master_not_answering_fails_and_drains(inventory: Inventory,
                                                   tmp_path: Path) -> None:
    site = FakeSite(master_down=True)
    with pytest.raises(StepFailedError, match=r"not checked: `salt` exited 2: Salt request "
                                              "timed out"):
        health_step(make_ctx(inventory, GPU, site, tmp_path)[0])
    assert len(drains(site)) == 1


def test_checks_are_asked_again_until_they_pass(inventory: Inventory,
                                                tmp_path: Path) -> None:
    """A node that has just converged may still be starting munge: the gate asks again
    (within --health-timeout) before it fails and drains."""
    site = FakeSite()
    good = site.nodes[GPU].munge
    site.nodes[GPU].munge = "munge: Error: Unable to access \"/run/munge/munge.socket.2\""
    real_run = site.run

    def run(argv: Sequence[str], *, timeout: float = 120) -> Result:
        res = real_run(argv, timeout=timeout)
        if parse.MUNGE_CMD in argv:
            site.nodes[GPU].munge = good  # munged is up by the next round
        return res

    site.run = run  # type: ignore[method-assign]
    ctx, said = make_ctx(inventory, GPU, site, tmp_path, health_timeout=30, poll=0.01)
    assert "munge credential: Success" in health_step(ctx)
    assert drains(site) == []
    assert any("munge" in line and "checking again" in line for line in said)
