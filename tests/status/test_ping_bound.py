"""The minion column's one `salt test.ping` is bounded by the CLI's -t and the master's
gather_job_timeout: a stopped minion keeps the salt CLI that long (its find_job), so a
bound of -t alone cut the call and marked every node unknown (found by
tests/swarm/test_swarm.py::test_fleet_apply_keeps_what_it_found_and_fleet_status_shows_it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fleet.master import salt
from fleet.master.runner import Result
from fleet.status import sources


class RecordingRunner:
    """A stand-in for the master's runner: records each command and its time bound."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], float]] = []

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        self.calls.append((list(argv), timeout))
        return Result(tuple(argv), 0, '{"tbox-001": true, "tbox-002": false}\n', "")


def test_the_gather_job_timeout_is_the_masters(tmp_path: Path) -> None:
    assert salt.gather_job_timeout(tmp_path) == salt.SALT_GATHER_DEFAULT
    (tmp_path / "master").write_text("interface: 10.1.0.10\ngather_job_timeout: 30\n")
    assert salt.gather_job_timeout(tmp_path) == 30
    (tmp_path / "master.d").mkdir()
    (tmp_path / "master.d" / "fleet.conf").write_text("gather_job_timeout: 45\n")
    assert salt.gather_job_timeout(tmp_path) == 45  # read after master, as Salt does
    (tmp_path / "master.d" / "z.conf").write_text("gather_job_timeout: [not, a, number]\n")
    assert salt.gather_job_timeout(tmp_path) == 45


def test_a_ping_waits_for_the_cli_timeout_and_the_find_job() -> None:
    runner = RecordingRunner()
    got = sources.ping(runner, ["tbox-001", "tbox-002"], 20, gather=30)
    assert got == {"tbox-001": True, "tbox-002": False}
    ((argv, bound),) = runner.calls
    assert "-t20" in argv
    assert bound > 20 + 30  # -t, then the master's find_job, then the CLI's own start
