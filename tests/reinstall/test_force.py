"""``--force`` never powers a node off under jobs: the drain cancels them (scancel, each
named), and power_off refuses a node that still has some. Slurm cannot run here: a FAKE
Slurm (this runner answers scontrol, sinfo, squeue and scancel as a controller would,
its jobs ending once cancelled)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fleet.inventory.load import load_inventory
from fleet.master.keys import MinionKeys
from fleet.master.runner import Result
from fleet.reinstall.context import Context, Options, StepFailedError
from fleet.reinstall.steps import drain, power_off
from reinstall.helpers import ROOT, RecordingBootMode

NODE = "tbox-001"  # slurm.compute


@dataclass
class FakeSlurm:
    jobs: list[str]
    cancel_works: bool = True
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        a = tuple(argv)
        self.calls.append(a)
        out = ""
        if a[0] == "squeue":
            out = "".join(j + "\n" for j in self.jobs)
        elif a[0] == "sinfo":
            out = "draining\n" if self.jobs else "drained\n"
        elif a[0] == "scancel" and self.cancel_works:
            self.jobs = [j for j in self.jobs if j not in a[1:]]
        return Result(a, 0, out, "")


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
