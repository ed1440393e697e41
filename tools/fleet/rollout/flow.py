"""One rollout: wave by wave (fleet.rollout.plan), each node of a wave on its own thread
through drain -> apply -> reboot (``--reboot``; refused for a node whose PXE boot mode
is install or cannot be read, fleet.pxe.powerguard) -> health -> resume; the next wave
starts when the whole wave is back; the first failed node stops the rollout, drained
with the reason. Shares the reinstall's machinery: its journal (JSON lines, fsynced),
its lock, its scontrol/sinfo calls and its command runner; the health gate is
``fleet health``'s (fleet.health.run.check) for that one node. Each node's steps run under
that node's reinstall lock (``<node_locks>/<node>/lock``, fleet.master.lock): a node
that ``fleet reinstall`` is working on fails the rollout at ``lock``, untouched, and a
reinstall started while the rollout works on a node is refused.

Journal (``<state>/journal.jsonl``): ``run`` (mode new|resume|abort; a new run carries
its options), ``wave`` (phase start|end, index, nodes), ``step`` (node, step, phase
start|end, outcome ok|skipped|failed, detail, seconds), ``node`` (outcome done|failed,
seconds), ``finish`` (done|failed|aborted, and ``left``: what is still drained)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fleet.inventory.compute import preemptible_partition
from fleet.inventory.model import Inventory
from fleet.master import layout, slurm
from fleet.master.journal import Journal
from fleet.master.lock import BusyError, NodeLock
from fleet.master.rolloutlog import latest
from fleet.master.runner import CommandError, Runner
from fleet.master.text import clean
from fleet.pxe.powerguard import FORCE_FLAG, BootModeReader, power_refusal
from fleet.rollout import plan

PREFIX = "fleet rollout"
STEPS = ("lock", "drain", "apply", "reboot", "health", "resume")


@dataclass(frozen=True)
class Options:
    target: str = "*"
    states: tuple[str, ...] = ()  # empty: the highstate
    wave: int = 1
    reboot: bool = False
    force: bool = False  # do not wait for running jobs when draining
    ignore_boot_mode: bool = False  # reboot a node even in PXE install mode (wipes it)
    drain_timeout: float = 3600.0
    apply_timeout: float = 1800.0
    boot_timeout: float = 900.0
    health_timeout: float = 300.0
    poll: float = 5.0

    @property
    def what(self) -> str:
        return "state.apply " + ",".join(self.states) if self.states else "highstate"

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Options:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        known["states"] = tuple(known.get("states", ()))
        return cls(**known)


class StepFailedError(Exception):
    """The step did not do its job; the message says why."""


class RolloutError(Exception):
    """Nothing to resume, or an unfinished rollout in the way; the message says which."""


class Applier(Protocol):
    def __call__(self, node: str, states: tuple[str, ...], timeout: float) -> str:
        """Apply; return a one-line summary, raise StepFailedError on a failed state."""
        ...


class Rebooter(Protocol):
    def __call__(self, node: str, timeout: float) -> str:
        """Power-cycle through the BMC and wait for the node's minion to answer from
        its new boot; return a summary, raise StepFailedError."""
        ...


class HealthGate(Protocol):
    def __call__(self, node: str) -> list[str]:
        """The node's problems (none: healthy)."""
        ...


@dataclass
class Parts:
    runner: Runner  # scontrol, sinfo
    apply: Applier
    reboot: Rebooter
    health: HealthGate
    boot_mode: BootModeReader  # each node's PXE boot mode, read before its reboot


@dataclass
class NodeRun:
    node: str
    outcome: str = "pending"  # done | failed | pending
    steps: dict[str, float] = field(default_factory=dict)  # step -> seconds
    detail: dict[str, str] = field(default_factory=dict)
    failed_step: str | None = None
    message: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"node": self.node, "outcome": self.outcome, "failed_step": self.failed_step,
                "message": self.message,
                "steps": {s: {"seconds": round(self.steps[s], 2),
                              "detail": self.detail.get(s, "")} for s in self.steps}}


@dataclass
class Report:
    run_id: str
    outcome: str  # done | failed | aborted
    options: Options
    waves: list[list[str]] = field(default_factory=list)
    nodes: dict[str, NodeRun] = field(default_factory=dict)
    wave_seconds: list[float] = field(default_factory=list)
    left: dict[str, str] = field(default_factory=dict)
    message: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"run": self.run_id, "outcome": self.outcome, "options": asdict(self.options),
                "waves": self.waves, "wave_seconds": [round(s, 2) for s in self.wave_seconds],
                "nodes": [n.as_json() for n in self.nodes.values()], "left": self.left,
                "message": self.message}


# --- the run ------------------------------------------------------------------------------


class Rollout:
    def __init__(self, inv: Inventory, parts: Parts, state_dir: Path, node_locks: Path,
                 say: Callable[[str], None] = print) -> None:
        """``node_locks``: the reinstall's state root, where each node's lock lives."""
        self.inv = inv
        self.parts = parts
        self.state_dir = state_dir
        self.node_locks = node_locks
        self.journal = Journal(state_dir)
        self.say = say
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def _say(self, msg: str) -> None:
        with self._lock:
            self.say(f"[{time.monotonic() - self.t0:7.1f}s] {msg}")

    def _note(self, event: str, **fields: Any) -> None:
        with self._lock:
            self.journal.append(event, **fields)

    def interrupt(self) -> None:
        """Stop after the steps in flight (each node then left drained, journaled)."""
        self._stop.set()

    # -- entry points

    def start(self, names: list[str], opts: Options, *, resume: bool = False) -> Report:
        with NodeLock(self.state_dir, "fleet rollout"):
            st = latest(self.journal.entries())
            if resume:
                if not st.unfinished or st.options is None or st.run_id is None:
                    raise RolloutError(f"nothing to resume in {self.state_dir}")
                opts, run_id = Options.from_json(st.options), st.run_id
                names = [n for n in self._names(opts) if n not in st.done]
                self._note("run", run=run_id, mode="resume", remaining=names)
            else:
                if st.unfinished:
                    raise RolloutError(f"rollout {st.run_id} is unfinished (failed: "
                                       f"{', '.join(st.failed) or 'none'}): --resume or "
                                       "--abort it first")
                run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
                self._note("run", run=run_id, mode="new", options=asdict(opts), nodes=names)
            return self._run(run_id, names, opts)

    def abort(self) -> Report:
        with NodeLock(self.state_dir, "fleet rollout"):
            st = latest(self.journal.entries())
            if not st.unfinished or st.run_id is None or st.options is None:
                raise RolloutError(f"nothing to abort in {self.state_dir}")
            self._note("run", run=st.run_id, mode="abort")
            left = self._left(st.run_id, sorted(st.drained))
            self._note("finish", run=st.run_id, outcome="aborted", left=left)
            return Report(st.run_id, "aborted", Options.from_json(st.options), left=left,
                          message="aborted: the nodes it drained stay drained; resume "
                                  "each once it is healthy (`fleet health --resume` does "
                                  "not: the drain is fleet rollout's)" if left else "aborted")

    def _names(self, opts: Options) -> list[str]:
        from fleet.cliparts import DEFAULT_TARGET
        from fleet.inventory.lifecycle import default_target
        from fleet.inventory.target import resolve

        if opts.target == DEFAULT_TARGET:  # no TARGET: the nodes in service, as at the start
            return default_target(self.inv, "rollout")[0]
        return resolve(opts.target, self.inv.nodes)

    # -- waves

    def _run(self, run_id: str, names: list[str], opts: Options) -> Report:
        nodes = [self.inv.nodes[n] for n in names]
        waves = plan.waves(nodes, opts.wave)
        report = Report(run_id, "done", opts, waves=waves)
        self._say(f"rollout {run_id}: {opts.what} on {len(names)} node(s) in "
                  f"{len(waves)} wave(s) of at most {opts.wave} per partition"
                  + ("; reboot through the BMC" if opts.reboot else ""))
        for i, wave in enumerate(waves, 1):
            if self._stop.is_set():
                break
            t = time.monotonic()
            self._say(f"wave {i}/{len(waves)}: {', '.join(wave)}")
            self._note("wave", run=run_id, phase="start", index=i, nodes=wave)
            runs = {n: NodeRun(n) for n in wave}
            report.nodes.update(runs)
            threads = [threading.Thread(target=self._node, args=(run_id, opts, runs[n]),
                                        name=f"rollout-{n}") for n in wave]
            for th in threads:
                th.start()
            for th in threads:
                while th.is_alive():
                    th.join(timeout=0.5)
            took = time.monotonic() - t
            report.wave_seconds.append(took)
            failed = [r.node for r in runs.values() if r.outcome != "done"]
            self._note("wave", run=run_id, phase="end", index=i, seconds=took, failed=failed)
            self._say(f"wave {i}/{len(waves)} {'failed' if failed else 'done'} in "
                      f"{took:.1f}s" + (f": {', '.join(failed)}" if failed else ""))
            if failed:
                report.outcome = "failed"
                report.message = "; ".join(f"{r.node}: {r.failed_step}: {r.message}"
                                           for r in runs.values() if r.outcome != "done")
                break
        if self._stop.is_set() and report.outcome == "done":
            report.outcome, report.message = "failed", "interrupted by the operator"
        st = latest(self.journal.entries())
        report.left = self._left(run_id, sorted(st.drained)) if report.outcome != "done" else {}
        self._note("finish", run=run_id, outcome=report.outcome, left=report.left,
                   message=report.message)
        return report

    def _left(self, run_id: str, drained: list[str]) -> dict[str, str]:
        left = {}
        for n in drained:
            try:
                fields = self._slurm_fields(n)
            except CommandError as exc:
                left[n] = f"unknown ({exc})"
                continue
            state = fields.get("State", "?") if fields else "?"
            left[n] = f"{state}: {slurm.reason_text(fields.get('Reason', '')) if fields else ''}"
        return left

    # -- one node

    def _node(self, run_id: str, opts: Options, r: NodeRun) -> None:
        t_node = time.monotonic()
        lock = NodeLock(layout.node_dir(self.node_locks, r.node), f"fleet rollout {run_id}")
        self._note("step", run=run_id, node=r.node, step="lock", phase="start")
        try:
            with lock:
                r.steps["lock"] = time.monotonic() - t_node
                self._note("step", run=run_id, node=r.node, step="lock", phase="end",
                           outcome="ok", detail="", seconds=round(r.steps["lock"], 3))
                self._node_steps(run_id, opts, r)
        except BusyError as exc:  # nothing done to the node: it is the other command's
            r.steps["lock"], r.detail["lock"] = time.monotonic() - t_node, str(exc)
            r.outcome, r.failed_step, r.message = "failed", "lock", str(exc)
            self._note("step", run=run_id, node=r.node, step="lock", phase="end",
                       outcome="failed", detail=str(exc), seconds=round(r.steps["lock"], 3))
            self._say(f"{r.node}: lock failed: {exc}")
        self._note("node", run=run_id, node=r.node, outcome=r.outcome,
                   seconds=round(time.monotonic() - t_node, 3))

    def _node_steps(self, run_id: str, opts: Options, r: NodeRun) -> None:
        node = self.inv.nodes[r.node]
        is_slurm = node.has("slurm.compute")
        ours = {"drained": False}
        steps: list[tuple[str, Callable[[], str]]] = [
            ("drain", lambda: self._drain(run_id, opts, r.node, is_slurm, ours)),
            ("apply", lambda: self.parts.apply(r.node, opts.states, opts.apply_timeout)),
            ("reboot", lambda: self._reboot(opts, r.node)
             if opts.reboot else _skip("no --reboot")),
            ("health", lambda: self._health(opts, r.node)),
            ("resume", lambda: self._resume(run_id, r.node, ours)),
        ]
        for step, fn in steps:
            if self._stop.is_set():
                r.outcome, r.failed_step, r.message = "failed", step, \
                    "interrupted by the operator"
                break
            t = time.monotonic()
            self._note("step", run=run_id, node=r.node, step=step, phase="start")
            try:
                detail, outcome = fn(), "ok"
            except _SkippedError as s:
                detail, outcome = str(s), "skipped"
            except (StepFailedError, CommandError) as exc:
                detail, outcome = clean(exc, 400), "failed"
            except Exception as exc:  # a bug, or a BMC error: the node is still left safe
                detail, outcome = clean(f"{type(exc).__name__}: {exc}", 400), "failed"
            secs = time.monotonic() - t
            r.steps[step], r.detail[step] = secs, detail
            self._note("step", run=run_id, node=r.node, step=step, phase="end",
                       outcome=outcome, detail=detail, seconds=round(secs, 3),
                       **({"drained": ours["drained"]} if step == "drain" else {}))
            self._say(f"{r.node}: {step} {outcome} ({secs:.1f}s)"
                      + (f": {detail}" if detail else ""))
            if outcome == "failed":
                r.outcome, r.failed_step, r.message = "failed", step, detail
                break
        else:
            r.outcome = "done"
        # a failed Slurm node stays drained with the failure as its reason (a drain that
        # failed before it drained anything leaves the node as it was)
        if r.outcome == "failed" and is_slurm and (ours["drained"] or r.failed_step != "drain"):
            self._fail_drain(run_id, r, ours)

    def _fail_drain(self, run_id: str, r: NodeRun, ours: dict[str, bool]) -> None:
        """The failed node stays (or becomes) drained, the failure as the reason; a node
        someone else drained keeps their reason."""
        try:
            fields = self._slurm_fields(r.node)
            if fields and _drained(fields) and not _ours(fields):
                return
            slurm.drain(self.parts.runner, r.node, clean(
                f"{PREFIX} ({run_id}) failed at {r.failed_step}: {r.message}", 400))
            if not ours["drained"]:
                self._note("step", run=run_id, node=r.node, step="drain", phase="end",
                           outcome="ok", detail="drained after the failure", seconds=0,
                           drained=True)
        except CommandError as exc:
            r.message += f" (and draining it failed: {clean(exc)})"

    def _slurm_fields(self, node: str) -> dict[str, str] | None:
        return slurm.show_nodes(self.parts.runner, node).get(node)

    def _drain(self, run_id: str, opts: Options, node: str, is_slurm: bool,
               ours: dict[str, bool]) -> str:
        if not is_slurm:
            raise _SkippedError("not a Slurm node")
        fields = self._slurm_fields(node)
        if fields is None:
            raise StepFailedError("slurmctld does not know the node")
        if _drained(fields) and not _ours(fields):
            raise _SkippedError(f"already drained by someone else "
                           f"({clean(slurm.reason_text(fields.get('Reason', '')), 120)})"
                           ": it is rolled out and stays drained")
        try:
            done = slurm.drain_and_wait(
                self.parts.runner, node, f"{PREFIX} ({run_id}): {opts.what}",
                preemptible=preemptible_partition(self.inv.raw, self.inv.nodes[node]),
                force=opts.force, timeout=opts.drain_timeout, poll=opts.poll,
                stopped=self._stop.is_set,
                note=lambda state, s: self._say(f"{node}: waiting for its jobs ({state}, "
                                                f"{s:.0f}s)"),
                drained=lambda: ours.update(drained=True), say=self._say)
        except slurm.DrainWaitError as exc:
            if exc.stopped:
                raise StepFailedError(f"interrupted while {exc.state}") from None
            on = f"; job(s) {', '.join(exc.left)} still on it" if exc.left else ""
            raise StepFailedError(f"still {exc.state} after {opts.drain_timeout:g}s{on} (its "
                                  "jobs run on; --force cancels them)") from None
        cancelled = f", --force cancelled job(s) {', '.join(done.cancelled)}" \
            if done.cancelled else ""
        return f"{done.drained.state}" + (f" after waiting {done.drained.waited:.1f}s for its "
                                          "jobs" if done.drained.polls else "") + cancelled

    def _reboot(self, opts: Options, node: str) -> str:
        """The power cycle, unless the node's next network boot would install it
        (fleet.pxe.powerguard): read under the node's lock, just before the BMC call."""
        refusal = power_refusal(node, self.parts.boot_mode)
        if refusal is not None and not opts.ignore_boot_mode:
            raise StepFailedError(refusal)
        done = self.parts.reboot(node, opts.boot_timeout)
        return done if refusal is None else f"{done} ({FORCE_FLAG}: {refusal})"

    def _health(self, opts: Options, node: str) -> str:
        """Until healthy or ``health_timeout`` (slurmd re-registering after a restart)."""
        deadline = time.monotonic() + opts.health_timeout
        while True:
            problems = self.parts.health(node)
            if not problems:
                return "healthy"
            if time.monotonic() >= deadline or self._stop.is_set():
                raise StepFailedError("health: " + "; ".join(problems))
            self._say(f"{node}: health: {'; '.join(problems)}; checking again")
            time.sleep(opts.poll)

    def _resume(self, run_id: str, node: str, ours: dict[str, bool]) -> str:
        if not ours["drained"]:
            raise _SkippedError("not drained by this rollout")
        fields = self._slurm_fields(node)
        if fields is not None and _drained(fields) and not _ours(fields):
            ours["drained"] = False
            raise _SkippedError("drained again by someone else meanwhile: left drained")
        slurm.resume(self.parts.runner, node)
        ours["drained"] = False
        return "resumed"


class _SkippedError(Exception):
    """The step does not apply to this node; the message says why."""


def _skip(why: str) -> str:
    raise _SkippedError(why)


def _drained(fields: dict[str, str]) -> bool:
    return slurm.drained(fields)


def _ours(fields: dict[str, str]) -> bool:
    return slurm.drained_by(fields, PREFIX)
