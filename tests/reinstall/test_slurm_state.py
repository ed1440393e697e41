"""Reading sinfo's %T states (strings as Slurm prints them; the commands run in the lab),
and its rows of a node in two partitions (a worker node: its training partition and the
workers' preemptible one)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from fleet.master.runner import Result
from fleet.master.slurm import base_state, no_jobs_can_run, node_rows, state


class Sinfo:
    """A runner answering ``sinfo`` with fixed output, as slurmctld prints it."""

    def __init__(self, stdout: str) -> None:
        self.stdout = stdout
        self.argv: list[Sequence[str]] = []

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        self.argv.append(argv)
        return Result(tuple(argv), 0, self.stdout, "")


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


@pytest.mark.parametrize("out", ["drained\n", "drained\ndrained\n", "\ndrained\n\ndrained\n"])
def test_a_node_in_two_partitions_has_one_state(out: str) -> None:
    runner = Sinfo(out)
    assert state(runner, "tbox-001") == "drained"
    assert runner.argv == [["sinfo", "-h", "-N", "-n", "tbox-001", "-o", "%T"]]


def test_rows_that_differ_are_an_error_not_the_first() -> None:
    with pytest.raises(LookupError, match=r"tbox-001 different rows.*'draining'.*'drained'"):
        state(Sinfo("draining\ndrained\n"), "tbox-001")


def test_no_row_is_an_unknown_node() -> None:
    with pytest.raises(LookupError, match="does not know node tbox-009"):
        state(Sinfo(""), "tbox-009")


def test_node_rows_keep_distinct_rows_in_order() -> None:
    out = "tbox-001 drained gpu 3 Xid 79\ntbox-001 drained gpu 3 Xid 79\ntbox-001 idle\n"
    assert node_rows(out) == ["tbox-001 drained gpu 3 Xid 79", "tbox-001 idle"]
