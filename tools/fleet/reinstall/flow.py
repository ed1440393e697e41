"""Runs the steps for one node under its lock, journals each, and leaves a known state:
after a failure the node stays drained and its boot mode goes back to ``local``;
``--resume`` continues the latest run; ``--abort`` ends it.

SIGINT and SIGTERM (``Interrupts``, installed by the CLI): the step that runs ends as failed
"interrupted by the operator", the node is left safe as after any failure, and the process
exits 128 + the signal's number. A signal that comes while the flow writes the journal or
leaves the node safe is held until that is done; a second one only says so.
"""

from __future__ import annotations

import errno
import secrets
import signal
import time
import urllib.request
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from fleet.bmc.base import BmcError
from fleet.master import slurm
from fleet.master.journal import RunState, latest_run
from fleet.master.lock import NodeLock
from fleet.master.runner import CommandError
from fleet.pxe.bootmode import BootModeUnavailableError
from fleet.reinstall.context import Context, SkipStepError, StepFailedError
from fleet.reinstall.server import CallbackServer, node_addresses
from fleet.reinstall.steps import STEP_NAMES, STEPS
from fleet.signals import SignalCatcher


class FlowError(Exception):
    """The run cannot start (unfinished run, nothing to resume...)."""


INTERRUPTED = "interrupted by the operator"


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM: the run ends. A KeyboardInterrupt, so that code that handles
    Ctrl-C handles it too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Interrupts(SignalCatcher):
    """SIGINT and SIGTERM for the length of a reinstall, whatever the process inherited.

    A job that a non-interactive shell starts in the background inherits SIGINT ignored,
    and Python then installs no KeyboardInterrupt handler: an operator's (or a test's)
    SIGINT did nothing, and the run went on waiting for the install callback. SIGTERM's
    default ends the process at once, with the node still armed for a PXE install.

    ``install()`` (main thread only) sets handlers for both. The first signal raises
    ``Interrupted`` at once while ``live()`` (a step runs: a sleep, an HTTP call or a
    subprocess wait ends early); while ``held()`` (the flow writes the journal, sets the
    boot mode back, stops its endpoint) it is kept and raised when the next ``live()``
    begins. Any further signal is only reported: the cleanup must not be cut short.
    Without ``install()`` nothing changes (Python's own SIGINT handling applies).
    """

    def __init__(self, say: Callable[[str], None] = lambda msg: None) -> None:
        super().__init__(say)
        self.raised = False
        self._live = True  # before the flow starts nothing needs protecting

    def _stop(self, signum: int) -> None:
        self.say(f"{signal.Signals(signum).name}: stopping")
        if self._live:
            self.raised = True
            raise Interrupted(signum)

    def check(self) -> None:
        """Raise a signal that was held."""
        if self.received is not None and not self.raised:
            self.raised = True
            raise Interrupted(self.received)

    def live(self) -> AbstractContextManager[object]:
        return _Mode(self, True)

    def held(self) -> AbstractContextManager[object]:
        return _Mode(self, False)

    def _enter(self, live: bool) -> bool:
        """A live or held block begins: the mode before it (fleet.reinstall.parallel's
        per-thread interrupts override this pair)."""
        before = self._live
        if live:
            self.check()
        self._live = live
        return before

    def _exit(self, before: bool) -> None:
        self._live = before


class _Mode(AbstractContextManager[object]):
    def __init__(self, interrupts: Interrupts, live: bool) -> None:
        self.interrupts, self.live = interrupts, live
        self.before = True

    def __enter__(self) -> object:
        self.before = self.interrupts._enter(self.live)
        return self

    def __exit__(self, *exc: object) -> None:
        self.interrupts._exit(self.before)


@dataclass
class StepRecord:
    step: str
    outcome: str  # ok | skipped | failed
    seconds: float
    detail: str


@dataclass
class Report:
    node: str
    run_id: str
    mode: str
    outcome: str  # done | failed | aborted | stopped
    steps: list[StepRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    left: dict[str, str] = field(default_factory=dict)
    message: str = ""
    signal: str | None = None  # SIGINT | SIGTERM when one ended the run

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.outcome in ("done", "aborted", "stopped"), "node": self.node,
                "run": self.run_id, "mode": self.mode, "outcome": self.outcome,
                "message": self.message, "warnings": self.warnings, "left": self.left,
                "signal": self.signal, "steps": [vars(s) for s in self.steps]}


def resume_point(state: RunState, token_usable: bool) -> int:
    """Index of the first step a resumed run repeats. Never one that arms or powers on
    without a power-off confirmed first in the same run: from arm_install or power_on a
    resume goes back to power_off. A key or token that is spent, or a key withdrawn after
    the install, goes back to rotate_key (a new key, token and install)."""
    idx = next((i for i, n in enumerate(STEP_NAMES) if n not in state.completed),
               len(STEP_NAMES))
    rotate, off = STEP_NAMES.index("rotate_key"), STEP_NAMES.index("power_off")
    if "wait_install" in state.completed:
        return min(idx, rotate) if state.key_withdrawn else idx
    if "rotate_key" in state.completed and not token_usable:
        return min(idx, rotate)  # the token or key is spent
    if STEP_NAMES[idx] == "wait_install" and not state.disarmed:
        return idx  # the run ended while its installer ran: keep waiting for it
    return min(idx, off)


class Flow:
    def __init__(self, ctx: Context, callback_bind: tuple[str, int] | None = None,
                 interrupts: Interrupts | None = None,
                 addresses: Mapping[str, str] | None = None) -> None:
        """``addresses``: the address each node's installer calls from (default: the
        inventory's provisioning addresses); the endpoint serves nobody else."""
        self.ctx = ctx
        self.callback_bind = callback_bind
        self.addresses = dict(addresses) if addresses is not None \
            else node_addresses(ctx.inventory)
        self.callback_url: str | None = None
        self.interrupts = interrupts or Interrupts()

    # --- run / resume -------------------------------------------------------------

    def run(self, *, resume: bool = False, stop_after: str | None = None) -> Report:
        with self.interrupts.held():  # signals reach a step only (_steps: live)
            return self._run(resume, stop_after)

    def _run(self, resume: bool, stop_after: str | None) -> Report:
        ctx = self.ctx
        with NodeLock(ctx.node_dir):
            state = latest_run(ctx.journal.entries())
            if resume:
                if not state.unfinished:
                    raise FlowError(f"{ctx.name}: no unfinished reinstall to resume")
                assert state.run_id is not None
                ctx.run_id = state.run_id
                start = resume_point(state, ctx.tokens.usable())
                mode = "resume"
            else:
                if state.unfinished:
                    where = state.failed_step or (state.completed[-1] if state.completed
                                                  else "start")
                    raise FlowError(f"{ctx.name}: reinstall {state.run_id} is unfinished "
                                    f"(at {where}); use --resume or --abort")
                ctx.run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + \
                    secrets.token_hex(3)
                start = 0
                mode = "new"
            report = Report(ctx.name, ctx.run_id, mode, "stopped")
            first = STEP_NAMES[start] if start < len(STEPS) else "(none left)"
            ctx.journal.append("run", run=ctx.run_id, mode=mode, start_at=first)
            if mode == "resume":
                ctx.say(f"{ctx.name}: resuming {ctx.run_id} at {first}")
            with self._server(start):
                return self._steps(report, start, stop_after)

    def _steps(self, report: Report, start: int, stop_after: str | None) -> Report:
        ctx = self.ctx
        total = len(STEPS)
        for i in range(start, total):
            name, func = STEPS[i]
            ctx.say(f"[{i + 1}/{total}] {name} ...")
            ctx.journal.append("step", run=ctx.run_id, step=name, phase="start")
            t0 = time.monotonic()
            interrupted: str | None = None
            try:
                with self.interrupts.live():
                    detail, outcome = func(ctx), "ok"
            except SkipStepError as exc:
                detail, outcome = str(exc), "skipped"
            except (StepFailedError, BmcError, CommandError, BootModeUnavailableError,
                    OSError, LookupError) as exc:
                detail, outcome = str(exc), "failed"
            except KeyboardInterrupt as exc:
                detail, outcome = INTERRUPTED, "failed"
                interrupted = signal.Signals(exc.signum).name \
                    if isinstance(exc, Interrupted) else "SIGINT"
            except Exception as exc:
                detail, outcome = f"internal error: {type(exc).__name__}: {exc}", "failed"
            secs = time.monotonic() - t0
            extra = {"signal": interrupted} if interrupted else {}
            ctx.journal.append("step", run=ctx.run_id, step=name, phase="end",
                               outcome=outcome, detail=detail, seconds=round(secs, 3),
                               **extra)
            report.steps.append(StepRecord(name, outcome, round(secs, 3), detail))
            ctx.say(f"[{i + 1}/{total}] {name}: {outcome} in {secs:.1f}s: {detail}")
            if outcome == "failed":
                report.outcome, report.message = "failed", f"{name} failed: {detail}"
                report.signal = interrupted
                report.left = self._leave_safe(name)
                ctx.journal.append("finish", run=ctx.run_id, outcome="failed", step=name,
                                   left=report.left, **extra)
                report.warnings = ctx.warnings
                return report
            if name == stop_after:
                report.warnings = ctx.warnings
                return report  # unfinished on purpose: --resume continues
        report.outcome = "done"
        ctx.tokens.close()
        report.left = {"boot_mode": "local", "slurm": "resumed" if ctx.is_slurm_node()
                       else "not a Slurm node", "key": "new key accepted and in use"}
        ctx.journal.append("finish", run=ctx.run_id, outcome="done", left=report.left)
        report.warnings = ctx.warnings
        return report

    def _leave_safe(self, failed: str) -> dict[str, str]:
        """After a failure: the node must not PXE-install by surprise, and stays drained."""
        ctx = self.ctx
        left: dict[str, str] = {}
        state = latest_run(ctx.journal.entries())
        # from the start of an arm_install (a signal can end it after the links were
        # switched) to the callback, or to a disarm
        if state.armed:
            try:
                ctx.boot.set_mode(ctx.name, "local")
                ctx.journal.append("note", run=ctx.run_id, what="disarmed", boot_mode="local")
                left["boot_mode"] = "local (set back after the failure)"
            except Exception as exc:
                left["boot_mode"] = f"UNKNOWN: could not set local: {exc}"
        else:
            left["boot_mode"] = "local (never armed in this run)" \
                if "arm_install" not in state.completed else "local"
        if ctx.is_slurm_node():
            left["slurm"] = "drained (stays drained until the reinstall completes)" \
                if "drain" in state.completed else "drain not confirmed (see the drain " \
                "step)" if failed == "drain" else "not drained"
        if "rotate_key" in state.completed or failed == "rotate_key":
            left["key"] = self._withdraw_key(state)
        return left

    def _withdraw_key(self, state: RunState) -> str:
        """A run that ends before the node's minion answered with the new key leaves no
        key on the master: the installer's callback alone proves nothing (whoever called
        back may hold it), so after it too the pre-accepted key is removed, the token
        revoked, the private key and token deleted here (a resume rotates again)."""
        ctx = self.ctx
        if state.minion_answered:
            return "new key accepted and in use by the node's minion"
        status = ctx.tokens.status() or {}
        # the endpoint revoked it already on the installer's error report
        served = bool(status.get("key_fetched")) and not status.get("error")
        ctx.tokens.revoke()
        for f in (ctx.token_file, ctx.key_file):
            f.unlink(missing_ok=True)
        try:
            if served:  # a minion may hold it: salt-key also drops its session
                ctx.keys.delete(ctx.name)
            else:
                ctx.keys.withdraw(ctx.name)
        except (CommandError, OSError) as exc:
            ctx.journal.append("note", run=ctx.run_id, what="revoke-failed",
                               reason=str(exc)[:300])
            return f"UNKNOWN: the pre-accepted key could not be removed: {exc}"
        why = "the minion never answered with it" if "wait_install" in state.completed \
            else "the install did not complete"
        ctx.journal.append("note", run=ctx.run_id, what="key-revoked", reason=why)
        return f"old key deleted; the pre-accepted new key removed ({why}); token revoked"

    # --- abort --------------------------------------------------------------------

    def abort(self) -> Report:
        with self.interrupts.held():  # an abort is short: it always ends
            return self._abort()

    def _abort(self) -> Report:
        ctx = self.ctx
        with NodeLock(ctx.node_dir):
            state = latest_run(ctx.journal.entries())
            if state.run_id is None:
                raise FlowError(f"{ctx.name}: no reinstall has run for this node")
            ctx.run_id = state.run_id
            ctx.journal.append("run", run=ctx.run_id, mode="abort")
            left: dict[str, str] = {}
            try:
                ctx.boot.set_mode(ctx.name, "local")
                left["boot_mode"] = "local"
            except Exception as exc:
                left["boot_mode"] = f"UNKNOWN: could not set local: {exc}"
            revoked = ctx.tokens.revoke()
            for f in (ctx.token_file, ctx.key_file):
                f.unlink(missing_ok=True)
            left["token"] = "revoked" if revoked else "none outstanding"
            waiting = ctx.keys.pki_dir / "minions" / ctx.name
            if "rotate_key" in state.completed and not state.minion_answered \
                    and waiting.exists():  # not withdrawn yet by the failure that ended it
                self._withdraw_key(state)
            if ctx.is_slurm_node():
                try:
                    left["slurm"] = slurm.state(ctx.runner, ctx.name) + \
                        " (not resumed by --abort: `scontrol update NodeName=" + \
                        f"{ctx.name} State=RESUME` when it is healthy)"
                except (CommandError, LookupError, OSError) as exc:
                    left["slurm"] = f"unknown ({exc})"
            try:
                where = ctx.keys.status(ctx.name)
                left["key"] = ", ".join(where) if where else "no key on the master"
            except (CommandError, OSError, ValueError) as exc:
                left["key"] = f"unknown ({exc})"
            ctx.journal.append("finish", run=ctx.run_id, outcome="aborted", left=left)
            done = ", ".join(state.completed) or "none"
            return Report(ctx.name, ctx.run_id, "abort", "aborted", left=left,
                          message=f"aborted {ctx.run_id}; steps that had completed: {done}")

    # --- the installer's endpoint -------------------------------------------------

    def _server(self, start: int) -> AbstractContextManager[object]:
        if self.callback_bind is None or start > STEP_NAMES.index("wait_install"):
            return nullcontext()
        self.callback_url, serving = endpoint(self.ctx, self.callback_bind, self.addresses)
        return serving


def endpoint(ctx: Context, bind: tuple[str, int], addresses: Mapping[str, str]
             ) -> tuple[str, AbstractContextManager[object]]:
    """The installer's endpoint at ``bind`` for every node of ``addresses`` (one reinstall,
    or every node of a parallel one: fleet.reinstall.parallel): its URL, and what serves
    it while entered (nothing when a healthy endpoint of another process has the port)."""
    try:
        server = CallbackServer(bind, ctx.state_root, ctx.boot, addresses,
                                revoke_key=ctx.keys.delete,
                                master_finger=ctx.keys.master_finger())
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        host, port = bind
        url = f"http://{host}:{port}"
        try:  # another reinstall's endpoint serves every node from the same state dir
            urllib.request.urlopen(url + "/v1/health", timeout=3).close()
        except OSError:
            raise FlowError(f"{url} is in use by something that is not the fleet "
                            "callback endpoint") from exc
        ctx.say(f"installer endpoint: {url} (served by another process)")
        return url, nullcontext()
    ctx.say(f"installer endpoint: {server.url}")
    return server.url, _Serving(server)


class _Serving(AbstractContextManager[object]):
    def __init__(self, server: CallbackServer) -> None:
        self.server = server

    def __enter__(self) -> object:
        self.server.start()
        return self.server

    def __exit__(self, *exc: object) -> None:
        self.server.stop()
