"""Several reinstalls at once (``fleet reinstall tbox-[001-010] --parallel N``): one flow
per node in a thread of this process, each with its own journal, lock and token as a
single reinstall has, at most N at a time; one node's failure does not stop the others.

The bound. Every install pulls its installer image from the provisioning host; N at once
share that host's provisioning link. ``link_bound`` allows as many at once as move their
images within ``IMAGE_WINDOW_S`` seconds on ``LINK_SHARE`` of the link (the rest is for the
packages, Salt and the nodes already installed):
``floor(link_gbps * 1e9 * LINK_SHARE * IMAGE_WINDOW_S / (image_bytes * 8))``, at least 1.
``--parallel`` above it runs at the bound and says so.

Signals. The flows run in worker threads, where Python delivers no signal. The main
thread's handler (``SignalHub``) hands the first SIGINT/SIGTERM to every node's
``NodeInterrupts``: a flow in a step gets ``Interrupted`` raised in its thread (at the next
bytecode: a wait in C, a sleep or a subprocess, ends first), a flow that writes its journal
or leaves the node safe gets it at its next step, which then ends at once, so each flow
journals its interrupted step failed and leaves its node as after a failure, as one
reinstall does. Nodes not started yet are not started.
"""

from __future__ import annotations

import ctypes
import math
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from fleet.exitcodes import Exit, for_signal
from fleet.inventory.model import Inventory
from fleet.reinstall.flow import Interrupted, Interrupts, Report
from fleet.signals import SignalCatcher

LINK_SHARE = 0.5
IMAGE_WINDOW_S = 60.0
DEFAULT_IMAGE_BYTES = 3 * 2**30  # an Ubuntu live-server ISO (24.04: 2.6 GiB) and initrd


@dataclass(frozen=True)
class Bound:
    limit: int
    why: str


def image_bytes(inv: Inventory, pxe_root: Path | None) -> tuple[int, str]:
    """The installer image's size: the ISO (site.install.iso_url) as deployed under the
    pxe root, else DEFAULT_IMAGE_BYTES."""
    install = inv.raw.site.install
    root = pxe_root or Path(str(inv.raw.site.pxe_root))
    candidates = [urlsplit(str(install.iso_url)).path.lstrip("/"), str(install.kernel),
                  str(install.initrd)]
    sizes = []
    for rel in candidates:
        try:
            sizes.append((root / rel).stat().st_size)
        except OSError:
            sizes.append(0)
    if sizes[0]:
        return sum(sizes), f"the installer under {root} ({sum(sizes) / 2**30:.1f} GiB)"
    return DEFAULT_IMAGE_BYTES, f"an installer image of {DEFAULT_IMAGE_BYTES / 2**30:.0f} " \
        f"GiB (the default: no ISO under {root})"


def link_bound(inv: Inventory, pxe_root: Path | None = None) -> Bound:
    """How many installs at once the provisioning host's link carries (module docstring)."""
    host = inv.raw.site.provisioning_host
    node = inv.nodes.get(host)
    gbps = node.prov.speed_gbps if node is not None else None
    size, what = image_bytes(inv, pxe_root)
    if not gbps:
        return Bound(1, f"{host}'s provisioning NIC speed is not in the inventory: one at "
                        "a time")
    limit = max(1, math.floor(gbps * 1e9 * LINK_SHARE * IMAGE_WINDOW_S / (size * 8)))
    return Bound(limit, f"{host}'s provisioning link ({gbps} Gb/s), {LINK_SHARE:.0%} of "
                        f"it moving {what} to each node within {IMAGE_WINDOW_S:g}s")


# --- signals across threads -------------------------------------------------------------


def _async_raise(thread_id: int, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in that thread at its next bytecode (None: cancel a pending one)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc is not None else None)


class NodeInterrupts(Interrupts):
    """One node's ``Interrupts`` in a worker thread: the signal comes from ``deliver``
    (the main thread's ``SignalHub``), not from a handler of its own. Starts held: outside
    its steps a flow only keeps the signal for its next step."""

    def __init__(self, say: Callable[[str], None] = lambda msg: None) -> None:
        super().__init__(say)
        self._live = False
        self._lock = threading.RLock()  # the main thread's handler may run inside it
        self._thread: int | None = None
        self._sent = False  # an async Interrupted was sent...
        self._seen = False  # ...and raised in the flow's thread

    def bind(self) -> None:
        """The calling thread runs this node's flow."""
        self._thread = threading.get_ident()

    def install(self) -> NoReturn:
        raise RuntimeError("NodeInterrupts get their signals from a SignalHub")

    def deliver(self, signum: int) -> None:
        with self._lock:
            if self.received is not None:
                return
            self.received = signum
            if self._live and self._thread is not None:
                self.raised = self._sent = True
                _async_raise(self._thread, self._exception(signum))

    def _exception(self, signum: int) -> type[Interrupted]:
        owner = self

        class _Signal(Interrupted):
            def __init__(self) -> None:
                super().__init__(signum)
                owner._seen = True

        return _Signal

    def _enter(self, live: bool) -> bool:
        with self._lock:
            before = self._live
            if live and self.received is not None and not self.raised:
                self.raised = True
                raise Interrupted(self.received)
            self._live = live
            return before

    def _exit(self, before: bool) -> None:
        with self._lock:
            if self._live and not before and self._sent and not self._seen:
                # the step ended before the signal reached it: it must not land in the
                # journal writes and cleanup that follow; the next step raises it
                _async_raise(threading.get_ident(), None)
                self._sent, self.raised = False, False
            self._live = before


class SignalHub(SignalCatcher):
    """SIGINT/SIGTERM for a parallel run (main thread): the first goes to every node."""

    AGAIN = "every node is being left safe first"

    def __init__(self, say: Callable[[str], None] = lambda msg: None) -> None:
        super().__init__(say)
        self.nodes: list[NodeInterrupts] = []
        self._lock = threading.RLock()  # the handler may run while interrupts() holds it

    def interrupts(self, say: Callable[[str], None]) -> NodeInterrupts:
        node = NodeInterrupts(say)
        with self._lock:
            self.nodes.append(node)
            if self.received is not None:
                node.deliver(self.received)
        return node

    def _stop(self, signum: int) -> None:
        self.say(f"{signal.Signals(signum).name}: stopping every node (each journals the "
                 "step it was in and is left safe); nodes not started are not started")
        with self._lock:
            for node in self.nodes:
                node.deliver(signum)


# --- the run ----------------------------------------------------------------------------


@dataclass
class NodeResult:
    node: str
    outcome: str  # done|failed|aborted|stopped (a Report's), busy|refused|error|not-started
    exit: int
    seconds: float = 0.0
    report: Report | None = None
    message: str = ""

    def as_json(self) -> dict[str, Any]:
        base: dict[str, Any] = self.report.as_json() if self.report else {
            "ok": False, "node": self.node, "steps": [], "left": {}}
        return {**base, "outcome": self.outcome, "exit": self.exit,
                "seconds": round(self.seconds, 3),
                "message": self.message or base.get("message", "")}


Job = Callable[[str, NodeInterrupts], NodeResult]

# the run's exit code: a signal first (128 + it), else the first of these a node has
PRIORITY = (Exit.FAILED, Exit.INTERNAL, Exit.IO, Exit.BUSY, Exit.USAGE)


@dataclass
class Run:
    results: list[NodeResult]
    parallel: int
    wall: float
    signal: str | None = None
    peak: int = 0  # most flows that ran at once
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def exit(self) -> int:
        if self.signal:
            return int(for_signal(signal.Signals[self.signal]))
        codes = {r.exit for r in self.results}
        return next((int(c) for c in PRIORITY if c in codes), int(Exit.OK))


def run_all(nodes: Sequence[str], job: Job, parallel: int, hub: SignalHub,
            say: Callable[[str], None] = lambda msg: None) -> Run:
    """``job`` for every node, at most ``parallel`` at once, in inventory order; each
    one's failure (or exception) is its own. Returns when every started job has ended."""
    results: dict[str, NodeResult] = {}
    slots = threading.BoundedSemaphore(max(1, parallel))
    running, peak = [0], [0]
    count_lock = threading.Lock()
    threads: list[threading.Thread] = []
    t0 = time.monotonic()

    def work(node: str, interrupts: NodeInterrupts) -> None:
        interrupts.bind()
        with count_lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        started = time.monotonic()
        try:
            res = job(node, interrupts)
        except BaseException as exc:  # a bug, or a signal outside the flow's steps
            res = NodeResult(node, "error", int(Exit.INTERNAL),
                             message=f"internal error: {type(exc).__name__}: {exc}")
        res.seconds = time.monotonic() - started
        results[node] = res
        with count_lock:
            running[0] -= 1
        slots.release()

    for node in nodes:
        while not slots.acquire(timeout=0.2):  # the main thread stays free for signals
            pass
        if hub.received is not None:
            slots.release()
            results[node] = NodeResult(node, "not-started", int(Exit.FAILED),
                                       message=f"not started: {hub.name} came first")
            continue
        say(f"{node}: starting ({len(threads) + 1} of {len(nodes)})")
        t = threading.Thread(target=work, args=(node, hub.interrupts(_prefixed(say, node))),
                             name=f"reinstall-{node}", daemon=True)
        threads.append(t)
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(timeout=0.2)
    return Run([results[n] for n in nodes], parallel, time.monotonic() - t0, hub.name,
               peak[0])


def _prefixed(say: Callable[[str], None], node: str) -> Callable[[str], None]:
    """Progress lines of one node's flow, each naming the node."""
    def out(msg: str) -> None:
        say(msg if msg.startswith(f"{node}:") else f"{node}: {msg}")
    return out


def summary(run: Run) -> list[str]:
    """One line per node: outcome, time, each step's seconds; then the totals."""
    width = max((len(r.node) for r in run.results), default=4)
    lines = []
    for r in run.results:
        steps = ", ".join(f"{s.step} {s.seconds:.1f}s"
                          + ("" if s.outcome == "ok" else f" ({s.outcome})")
                          for s in (r.report.steps if r.report else []))
        why = f": {r.message}" if r.exit != 0 and r.message else ""
        lines.append(f"{r.node:<{width}}  {r.outcome:<11} {r.seconds:7.1f}s  "
                     f"{steps or '-'}{why}")
    n_ok = sum(r.outcome in ("done", "aborted") for r in run.results)
    lines.append(f"{n_ok} of {len(run.results)} ok in {run.wall:.1f}s (at most "
                 f"{run.parallel} at once; {run.peak} ran together)"
                 + (f"; ended by {run.signal}" if run.signal else ""))
    return lines


def as_json(run: Run) -> dict[str, Any]:
    return {"ok": run.exit == 0, "exit": run.exit, "wall_seconds": round(run.wall, 3),
            "parallel": run.parallel, "peak": run.peak, "signal": run.signal, **run.extra,
            "nodes": [r.as_json() for r in run.results]}
