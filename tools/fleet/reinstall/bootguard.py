"""converge's boot guard: a node whose minion has not answered within the boot grace after
the installer's callback (one hung in its firmware after the installer's reboot: POST, a
PXE boot that never starts) is power-cycled once through its BMC, when the BMC says it is
on. A hard reset only: nothing arms PXE again (the boot mode is local since the callback,
and the install's PXE-once override was spent on the install's boot), so it boots from its
disk. At most once a run (the journal's ``boot-power-cycle`` note, read again on a resume);
a BMC that cannot do it is said and not asked again. What the guard did is said to the
operator, journaled, and named in the step's summary or failure. The grace is counted from
the step's start: the callback (wait_install ends on it), or a resume's start."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from fleet.bmc.base import BmcError
from fleet.master.journal import latest_entries

if TYPE_CHECKING:
    from fleet.reinstall.context import Context, Options

NOTE = "boot-power-cycle"
# of --converge-timeout, when --boot-grace is not given: a node still silent by then is
# not slow, and the rest leaves it the time of one more boot and the highstate
GRACE_SHARE = 0.5


def grace(options: Options) -> float:
    """Seconds without an answer from the minion before the guard acts (0: never)."""
    if options.boot_grace is None:
        return options.converge_timeout * GRACE_SHARE
    return options.boot_grace


class BootGuard:
    """One converge step's guard; ``started``: the step's start (time.monotonic)."""

    def __init__(self, ctx: Context, started: float) -> None:
        self.ctx = ctx
        self.grace = grace(ctx.options)
        self.due = started + self.grace
        self.said = _earlier(ctx)  # what it did earlier in this run (a resumed converge)

    def check(self) -> None:
        """The minion has not answered: act once the grace is over, at most once a run."""
        if self.said is not None or self.grace <= 0 or time.monotonic() < self.due:
            return
        outcome, self.said = self._act()
        self.ctx.say(f"  {self.said}")
        self.ctx.journal.append("note", run=self.ctx.run_id, what=NOTE, outcome=outcome,
                                detail=self.said)

    def summary(self) -> str:
        """What the guard did, for the step's detail ("" when nothing)."""
        return "" if self.said is None else f"; {self.said}"

    def _act(self) -> tuple[str, str]:
        """Its outcome (cycled | not-on | failed) and what it says."""
        late = f"no answer {self._since_callback():.0f}s after the callback"
        try:
            bmc = self.ctx.bmc()
            state = bmc.power_state()
            if state != "on":
                return "not-on", (f"{late}, and {bmc.name} reports the node {state}: not "
                                  "power-cycled")
            action = bmc.reset()
        except BmcError as exc:
            return "failed", (f"{late}: the BMC could not power-cycle it ({exc}); still "
                              "waiting")
        return "cycled", f"{late}: power-cycled once through the BMC ({bmc.name}: {action})"

    def _since_callback(self) -> float:
        status = self.ctx.tokens.status() or {}
        done = status.get("done")
        if isinstance(done, (int, float)):
            return time.time() - done
        return self.grace


def _earlier(ctx: Context) -> str | None:
    _start, entries = latest_entries(ctx.journal.entries())
    for e in entries:
        if e.get("event") == "note" and e.get("what") == NOTE:
            return f"{e.get('detail', 'power-cycled once through the BMC')} (earlier in " \
                "this run: not again)"
    return None
