"""The rollout's apply and reboot steps against the real master and BMCs.

apply: ``salt --async NODE state.apply [STATES]``, the return collected from the
master's job cache (``salt-run jobs.lookup_jid``), as the reinstall's converge step does:
the CLI's own wait gives up on a minion busy installing packages. Any state False, a
render error or no return by the deadline fails the step, naming the states.

reboot: the node's boot identity is read, the BMC power-cycles it (``power_on_or_reset``,
fleet.bmc), and the step waits for the minion to answer with another one: the node has
really been through a boot, not just slow to answer. The identity is the kernel's
``boot_id`` with PID 1's start time (clock ticks after boot, ``/proc/1/stat`` field 22):
a machine's boot changes the first, and a container's start (the lab's nodes, which share
the host's kernel) the second."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from fleet.bmc.base import BmcClient, BmcError
from fleet.health.parse import clean
from fleet.master.runner import Runner
from fleet.rollout.flow import StepFailedError

POLL = 5.0
BOOT_ID = "cat /proc/sys/kernel/random/boot_id; cut -d ' ' -f 22 /proc/1/stat"
_BOOT_ID = re.compile(r"([0-9a-f-]{36})\s+(\d+)\s*")


class SaltApply:
    def __init__(self, runner: Runner, poll: float = POLL) -> None:
        self.runner = runner
        self.poll = poll

    def __call__(self, node: str, states: tuple[str, ...], timeout: float) -> str:
        args = ["salt", "--async", node, "state.apply"]
        if states:
            args.append(",".join(states))
        res = self.runner.run(args, timeout=120).check()
        m = re.search(r"\b(\d{20})\b", res.stdout)
        if m is None:
            raise StepFailedError(f"salt --async state.apply gave no job id: "
                                  f"{clean(res.stdout)!r}")
        jid = m.group(1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            look = self.runner.run(["salt-run", "jobs.lookup_jid", jid, "--out=json"],
                                   timeout=120)
            try:
                data = json.loads(look.stdout) if look.stdout.strip() else {}
            except ValueError:
                data = {}
            if isinstance(data, dict) and node in data:
                return verdict(node, data[node])
            time.sleep(self.poll)
        raise StepFailedError(f"no return of job {jid} within {timeout:g}s")


def verdict(node: str, ret: Any) -> str:
    """A state.apply return: every state True -> a summary; else StepFailedError."""
    if not isinstance(ret, dict) or not ret:
        raise StepFailedError(f"state.apply returned no state results: {clean(ret, 300)}")
    failed = [k for k, v in ret.items() if isinstance(v, dict) and v.get("result") is False]
    if failed:
        first = ret[failed[0]]
        raise StepFailedError(
            f"{len(failed)} of {len(ret)} state(s) failed: "
            + ", ".join(clean(f.split('_|-')[1] if '_|-' in f else f, 80) for f in failed[:5])
            + f" ({clean(first.get('comment', ''), 160)})")
    changed = sum(1 for v in ret.values() if isinstance(v, dict) and v.get("changes"))
    return f"{len(ret)} states ok, {changed} changed"


class BmcReboot:
    def __init__(self, runner: Runner, bmc: Callable[[str], BmcClient],
                 poll: float = POLL) -> None:
        self.runner = runner
        self.bmc = bmc
        self.poll = poll

    def _boot_id(self, node: str) -> str | None:
        res = self.runner.run(["salt", node, "cmd.run", BOOT_ID, "-t", "15", "--out=json",
                               "--static"], timeout=120)
        try:
            got = json.loads(res.stdout).get(node) if res.stdout.strip() else None
        except (ValueError, AttributeError):
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
