"""Runs the steps for one node under its lock, journals each, and leaves a known state:
after a failure the node stays drained and its boot mode goes back to ``local``;
``--resume`` continues the latest run; ``--abort`` ends it."""

from __future__ import annotations

import errno
import secrets
import time
import urllib.request
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from fleet.bmc.base import BmcError
from fleet.reinstall import slurm
from fleet.reinstall.bootmode import BootModeUnavailableError
from fleet.reinstall.commands import CommandError
from fleet.reinstall.context import Context, SkipStepError, StepFailedError
from fleet.reinstall.journal import RunState, latest_run
from fleet.reinstall.lock import NodeLock
from fleet.reinstall.server import CallbackServer
from fleet.reinstall.steps import STEP_NAMES, STEPS

# Steps between arming the install and its callback: a failure there disarms the node.
ARMED = ("power", "wait_install")


class FlowError(Exception):
    """The run cannot start (unfinished run, nothing to resume...)."""


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

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.outcome in ("done", "aborted", "stopped"), "node": self.node,
                "run": self.run_id, "mode": self.mode, "outcome": self.outcome,
                "message": self.message, "warnings": self.warnings, "left": self.left,
                "steps": [vars(s) for s in self.steps]}


def resume_point(state: RunState, token_usable: bool) -> int:
    """Index of the first step a resumed run repeats."""
    idx = next((i for i, n in enumerate(STEP_NAMES) if n not in state.completed),
               len(STEP_NAMES))
    if "wait_install" not in state.completed:
        if "rotate_key" in state.completed and not token_usable:
            idx = min(idx, STEP_NAMES.index("rotate_key"))  # the token or key is spent
        elif "arm_install" in state.completed and state.disarmed:
            idx = min(idx, STEP_NAMES.index("arm_install"))
    return idx


class Flow:
    def __init__(self, ctx: Context, callback_bind: tuple[str, int] | None = None) -> None:
        self.ctx = ctx
        self.callback_bind = callback_bind
        self.callback_url: str | None = None

    # --- run / resume -------------------------------------------------------------

    def run(self, *, resume: bool = False, stop_after: str | None = None) -> Report:
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
            try:
                detail, outcome = func(ctx), "ok"
            except SkipStepError as exc:
                detail, outcome = str(exc), "skipped"
            except (StepFailedError, BmcError, CommandError, BootModeUnavailableError,
                    OSError, LookupError) as exc:
                detail, outcome = str(exc), "failed"
            except KeyboardInterrupt:
                detail, outcome = "interrupted by the operator", "failed"
            except Exception as exc:
                detail, outcome = f"internal error: {type(exc).__name__}: {exc}", "failed"
            secs = time.monotonic() - t0
            ctx.journal.append("step", run=ctx.run_id, step=name, phase="end",
                               outcome=outcome, detail=detail, seconds=round(secs, 3))
            report.steps.append(StepRecord(name, outcome, round(secs, 3), detail))
            ctx.say(f"[{i + 1}/{total}] {name}: {outcome} in {secs:.1f}s: {detail}")
            if outcome == "failed":
                report.outcome, report.message = "failed", f"{name} failed: {detail}"
                report.left = self._leave_safe(name)
                ctx.journal.append("finish", run=ctx.run_id, outcome="failed", step=name,
                                   left=report.left)
                report.warnings = ctx.warnings
                return report
            if name == stop_after:
                report.warnings = ctx.warnings
                return report  # unfinished on purpose: --resume continues
        report.outcome = "done"
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
        if "arm_install" in state.completed and "wait_install" not in state.completed:
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
        if "rotate_key" in state.completed:
            left["key"] = "old key deleted; new key accepted, not yet used by the node"
        return left

    # --- abort --------------------------------------------------------------------

    def abort(self) -> Report:
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
        try:
            server = CallbackServer(self.callback_bind, self.ctx.state_root, self.ctx.boot)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            host, port = self.callback_bind
            url = f"http://{host}:{port}"
            try:  # another reinstall's endpoint serves every node from the same state dir
                urllib.request.urlopen(url + "/v1/health", timeout=3).close()
            except OSError:
                raise FlowError(f"{url} is in use by something that is not the fleet "
                                "callback endpoint") from exc
            self.callback_url = url
            self.ctx.say(f"installer endpoint: {url} (served by another process)")
            return nullcontext()
        self.callback_url = server.url
        self.ctx.say(f"installer endpoint: {server.url}")
        return _Serving(server)


class _Serving(AbstractContextManager[object]):
    def __init__(self, server: CallbackServer) -> None:
        self.server = server

    def __enter__(self) -> object:
        self.server.start()
        return self.server

    def __exit__(self, *exc: object) -> None:
        self.server.stop()
