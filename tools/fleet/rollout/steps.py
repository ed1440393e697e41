"""The rollout's apply and reboot steps against the real master and BMCs.

apply: ``salt --async -L NODE state.apply [STATES]``, the return collected from the
master's job cache (``salt-run jobs.lookup_jid``) by the one Salt client, as the
reinstall's converge step does (fleet.master.salt): the CLI's own wait gives up on a
minion busy installing packages, and a minion that twice says it no longer runs the job
is lost at once, not waited for. Any state False, a render error, a lost job or no
return by the deadline fails the step, naming the states.

reboot: the node's boot identity is read, the BMC power-cycles it (``power_on_or_reset``,
fleet.bmc), and the step waits for the minion to answer with another one: the node has
really been through a boot, not just slow to answer. The identity is the kernel's
``boot_id`` with PID 1's start time (clock ticks after boot, ``/proc/1/stat`` field 22):
a machine's boot changes the first, and a container's start (the lab's nodes, which share
the host's kernel) the second."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from fleet.bmc.base import BmcClient, BmcError
from fleet.master.highstate import describe, judge
from fleet.master.runner import CommandError
from fleet.master.salt import MasterError, NoJobError, Salt
from fleet.master.text import clean
from fleet.rollout.flow import StepFailedError

POLL = 5.0
BOOT_ID = "cat /proc/sys/kernel/random/boot_id; cut -d ' ' -f 22 /proc/1/stat"
_BOOT_ID = re.compile(r"([0-9a-f-]{36})\s+(\d+)\s*")


class SaltApply:
    """``state.apply [STATES]`` on one node through the one Salt client: published, the
    return collected from the job cache, the node given up as lost when it twice says it
    no longer runs the job (fleet.master.salt), judged by fleet.master.highstate."""

    def __init__(self, salt: Salt) -> None:
        self.salt = salt

    def __call__(self, node: str, states: tuple[str, ...], timeout: float) -> str:
        try:
            got = self.salt.highstate([node], self.salt.clock() + timeout, states)
        except (NoJobError, CommandError) as exc:
            raise StepFailedError(clean(exc)) from None
        ret = got.returns.get(node)
        if ret is None:
            raise StepFailedError(f"no return of job {got.jid} within {timeout:g}s")
        return verdict(node, ret)


def verdict(node: str, ret: object) -> str:
    """A state.apply return (or a Lost): every state True -> a summary; else
    StepFailedError."""
    res = judge(node, ret)
    if res.status.bad:
        raise StepFailedError(describe(res))
    return describe(res)


class BmcReboot:
    def __init__(self, salt: Salt, bmc: Callable[[str], BmcClient],
                 poll: float = POLL) -> None:
        self.salt = salt
        self.bmc = bmc
        self.poll = poll

    def _boot_id(self, node: str) -> str | None:
        try:
            got = self.salt.call([node], "cmd.run", BOOT_ID, timeout=15).get(node)
        except MasterError:
            return None
        m = _BOOT_ID.fullmatch(got) if isinstance(got, str) else None
        return f"{m[1]}/{m[2]}" if m else None

    def __call__(self, node: str, timeout: float) -> str:
        before = self._boot_id(node)
        if before is None:
            raise StepFailedError("the minion did not answer before the reboot")
        try:
            client = self.bmc(node)
            action = client.power_on_or_reset()
        except (BmcError, OSError) as exc:
            raise StepFailedError(f"BMC: {clean(exc)}") from exc
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            time.sleep(self.poll)
            now = self._boot_id(node)
            if now is not None and now != before:
                return f"{client.name}: power {action}; back after {time.monotonic() - t0:.0f}s"
        raise StepFailedError(f"{client.name}: power {action}, but the minion did not answer "
                              f"from a new boot within {timeout:g}s")
