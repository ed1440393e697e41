"""Reading sinfo's %T states (strings as Slurm prints them; the commands run in the lab)."""

from __future__ import annotations

import pytest

from fleet.master.slurm import base_state, no_jobs_can_run


@pytest.mark.parametrize(("state", "idle"), [
    ("drained", True), ("drained*", True), ("down*", True), ("fail", True),
    ("draining", False), ("mixed", False), ("allocated", False), ("idle", False),
    ("completing", False), ("draining*", False), ("idle~", False),
])
def test_no_jobs_can_run(state: str, idle: bool) -> None:
    assert no_jobs_can_run(state) is idle


def test_base_state_drops_flags() -> None:
    assert base_state("drained*") == "drained"
    assert base_state("idle~") == "idle"
