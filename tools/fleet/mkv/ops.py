"""Run mkv's offline maintenance (``rebuild``, ``rebalance``) on an array's master host,
through Salt, with the array's own flags:

1. read the master unit's ``ExecStart`` and ``User``; refuse when its flags differ from the
   inventory's (the unit is stale: the highstate must run first, or the inventory is wrong);
2. stop the unit (LevelDB allows one process);
3. run ``mkv <flags> rebuild|rebalance`` as the unit's user, as an argument list (no shell);
4. start the unit again, whatever step 3 did, and check that it is active.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fleet.master.runner import Runner
from fleet.master.salt import MasterError, Salt
from fleet.mkv.flags import ArrayFlags, parse_exec_start


class MkvOpError(Exception):
    """A step could not run (the master did not answer, the unit is missing or stale)."""


class NoAnswerError(MkvOpError):
    """The array's master host gave no answer through Salt (the Salt master, or the minion,
    could not be reached): exit 4 as for every verb, not a step that failed."""


class StaleUnitError(MkvOpError):
    pass


@dataclass
class OpReport:
    array: str
    master: str
    verb: str
    argv: list[str]
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    restarted: bool = False
    steps: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.restarted

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "array": self.array, "master": self.master, "verb": self.verb,
                "argv": self.argv, "returncode": self.returncode, "restarted": self.restarted,
                "stdout": self.stdout, "stderr": self.stderr, "steps": self.steps}


class MasterHost:
    """``cmd.run_all`` of an argument list on one minion, through the one Salt client."""

    def __init__(self, runner: Runner, minion: str) -> None:
        self.salt = Salt(runner)
        self.minion = minion

    def run(self, argv: list[str], *, timeout: float = 60, runas: str | None = None
            ) -> dict[str, Any]:
        try:
            ret = self.salt.run_argv(self.minion, argv, timeout=timeout, runas=runas)
        except MasterError as exc:
            ret = str(exc)
        if not isinstance(ret, dict) or "retcode" not in ret:
            detail = str(ret or "no answer")[-300:]
            raise NoAnswerError(f"{self.minion} did not run `{' '.join(argv)}`: {detail}")
        return ret


def check_unit(host: MasterHost, flags: ArrayFlags) -> tuple[str, str]:
    """The unit's binary and user, once its flags are the inventory's."""
    shown = host.run(["systemctl", "show", "-p", "ExecStart", "--value", flags.unit])
    argv = parse_exec_start(str(shown.get("stdout", "")))
    if not argv:
        raise MkvOpError(f"{flags.unit} has no ExecStart on {flags.master}: is mkv.master "
                         "applied there?")
    want = flags.argv(argv[0], "server")
    if argv != want:
        raise StaleUnitError(f"{flags.unit} on {flags.master} runs `{' '.join(argv)}`, the "
                        f"inventory says `{' '.join(want)}`: apply the highstate on "
                        f"{flags.master} (mkv.master) first, or fix the inventory")
    user = str(host.run(["systemctl", "show", "-p", "User", "--value", flags.unit])
               .get("stdout", "")).strip()
    return argv[0], user or "root"


def run_maintenance(host: MasterHost, flags: ArrayFlags, verb: str, *, timeout: float,
                    say: Callable[[str], None]) -> OpReport:
    binary, user = check_unit(host, flags)
    report = OpReport(flags.name, flags.master, verb, flags.argv(binary, verb))
    say(f"{flags.master}: stopping {flags.unit}")
    stop = host.run(["systemctl", "stop", flags.unit])
    report.steps.append(f"stop: exit {stop['retcode']}")
    if stop["retcode"] != 0:
        raise MkvOpError(f"could not stop {flags.unit} on {flags.master}: "
                         f"{str(stop.get('stderr', '')).strip()}")
    try:
        say(f"{flags.master}: {' '.join(report.argv)} (as {user})")
        ret = host.run(report.argv, timeout=timeout, runas=user)
        report.returncode = int(ret["retcode"])
        report.stdout = str(ret.get("stdout", ""))
        report.stderr = str(ret.get("stderr", ""))
        report.steps.append(f"{verb}: exit {report.returncode}")
    finally:
        say(f"{flags.master}: starting {flags.unit}")
        host.run(["systemctl", "start", flags.unit])
        active = host.run(["systemctl", "is-active", flags.unit])
        report.restarted = str(active.get("stdout", "")).strip() == "active"
        report.steps.append("start: " + ("active" if report.restarted else
                                         str(active.get("stdout", "")).strip()))
    return report
