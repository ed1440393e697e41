"""What ``fleet status --live`` asks costs the master no needless work: the minion column
is one ``test.ping`` job (not the salt CLI's ``--static`` batch, which first sends every
minion a ping job of its own), read from the CLI's output as it prints it (one JSON object
per minion, as each returns); the key column is read in this process by Salt's own key
store, with no salt-key process."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from fleet.master.runner import Result
from fleet.master.salt import MasterError
from fleet.status import sources
from support.saltkeys import salt_master_config
from support.saltstandin import UNREACHABLE

# what salt 3008's CLI printed for `salt -L model-01,tbox-039,nosuch-01 test.ping -t10
# --out=json` on the swarm (nosuch-01: no key on the master), and its exit code
NOT_RETURNED = ("Minion did not return. [No response]\nThe minions may not have all "
                "finished running and any remaining minions will return upon completion. "
                "To look up the return data for this job later, run the following "
                "command:\n\nsalt-run jobs.lookup_jid 20261205232453018680")
CLI_OUT = "".join(json.dumps({n: v}, indent=4) + "\n" for n, v in (
    ("model-01", True), ("tbox-039", True), ("nosuch-01", NOT_RETURNED)))


class RecordingRunner:
    """A stand-in for the master's runner: answers every command with ``result``'s
    code and output, and records each argv."""

    def __init__(self, rc: int, stdout: str, stderr: str = "") -> None:
        self.rc, self.stdout, self.stderr = rc, stdout, stderr
        self.calls: list[list[str]] = []

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        self.calls.append(list(argv))
        return Result(tuple(argv), self.rc, self.stdout, self.stderr)


def test_the_minion_column_is_one_ping_job_read_as_the_cli_prints_it() -> None:
    runner = RecordingRunner(1, CLI_OUT, "ERROR: Minions returned with non-zero exit code\n")
    got = sources.ping(runner, ["model-01", "tbox-039", "nosuch-01"], 10, gather=30)
    assert got == {"model-01": True, "tbox-039": True, "nosuch-01": False}
    ((argv),) = runner.calls
    assert argv[:4] == ["salt", "-L", "model-01,tbox-039,nosuch-01", "test.ping"]
    assert "--static" not in argv  # a 100% batch: a test.ping job before the call's own


def test_text_after_the_objects_is_not_read_and_a_silent_master_is_an_error() -> None:
    runner = RecordingRunner(0, CLI_OUT + "No minions matched the target.\n{\"x\": 1}\n")
    got = sources.ping(runner, ["model-01", "x"], 10)
    assert got == {"model-01": True, "x": False}
    down = RecordingRunner(2, "", "Salt request timed out. The master is not responding.\n")
    with pytest.raises(MasterError, match="exited 2: Salt request timed out"):
        sources.ping(down, ["model-01"], 10)


def test_a_master_the_cli_cannot_reach_is_an_error_though_it_exits_0() -> None:
    """What salt 3008's CLI printed, with exit 0, for a config dir of no running master
    (without --static; with it, a traceback and exit 1): its message, one JSON string."""
    runner = RecordingRunner(0, json.dumps(UNREACHABLE) + "\n")
    with pytest.raises(MasterError, match="could not be contacted"):
        sources.ping(runner, ["model-01"], 10)


def test_the_keys_are_read_in_this_process(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    conf, pki = salt_master_config(tmp_path)
    for node, where in (("gpu-01", "minions"), ("gpu-02", "minions_pre"),
                        ("gpu-03", "minions_rejected"), ("gpu-04", "minions_denied")):
        (pki / where / node).write_text("-----BEGIN PUBLIC KEY-----\nx\n")

    started: list[str] = []
    real = subprocess.Popen.__init__

    def recorded(self: subprocess.Popen[bytes], args: Sequence[str], *a: object,
                 **k: object) -> None:
        started.append(str(args[0]))
        real(self, args, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess.Popen, "__init__", recorded)
    got = sources.keys(conf, ["gpu-01", "gpu-02", "gpu-03", "gpu-04", "gpu-05"])
    assert got == {"gpu-01": "accepted", "gpu-02": "pending", "gpu-03": "rejected",
                   "gpu-04": "denied", "gpu-05": "missing"}
    assert not [a for a in started if "salt" in Path(a).name], started


def test_another_masters_config_is_an_error_not_every_key_missing(tmp_path: Path) -> None:
    conf, pki = salt_master_config(tmp_path)
    (pki / "minions").rmdir()
    with pytest.raises(MasterError, match="minions: no such directory"):
        sources.keys(conf, ["gpu-01"])
