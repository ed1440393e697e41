"""Run the highstate on a list of nodes and account for every one of them.

Publish asynchronously (in windows of ``--batch N``: our own sliding window, not Salt's
batch mode), take returns from the event bus as they come, look every job up in the
master's job cache as well (a return the bus dropped is still there), and ask a silent
minion with ``saltutil.find_job`` whether it still runs the job, giving it up as lost by
the rule of fleet.master.salt. A node ends as one of the statuses of the one verdict,
:mod:`fleet.master.highstate`; nothing is left unaccounted."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fleet.master.highstate import NodeResult, Status, classify, classify_plain
from fleet.master.pyclient import Master, Return
from fleet.master.salt import FIND_JOB_EVERY, FIND_JOB_WAIT, LOST_AFTER


@dataclass(frozen=True, slots=True)
class Options:
    fun: str = "state.apply"
    args: tuple[str, ...] = ()
    test: bool = False
    batch: int | None = None        # at most this many nodes running at once
    timeout: float = 1800.0         # seconds from a node's publish to giving up on it
    lookup_every: float = 10.0      # job cache lookups of the jobs still waiting
    find_job_after: float = FIND_JOB_EVERY   # ask a silent node with find_job this often,
    find_job_timeout: float = FIND_JOB_WAIT  # waiting this long for its answer
    lost_after: int = LOST_AFTER  # "not running it" answers, in a row, before "lost"


@dataclass(slots=True)
class _Flight:
    jid: str
    published: float
    asked: float          # last find_job
    gone: int = 0         # consecutive "answered, not running it"
    answered: bool = False  # ever answered find_job


Progress = Callable[[str], None]


def apply(master: Master, nodes: list[str], opts: Options, progress: Progress,
          clock: Callable[[], float] = time.monotonic) -> list[NodeResult]:
    """One result per node of ``nodes``, in that order."""
    run = _Run(master, opts, progress, clock)
    run.sort_keys(nodes)
    while run.todo or run.flying:
        run.publish()
        for r in master.events(wait=0.5):
            run.take(r)
        run.lookups()
        _find_jobs(master, run.flying, opts, clock, run.done)
        run.expire()
    return [run.results[n] for n in nodes]


class _Run:
    """One :func:`apply`: the nodes still to publish, the jobs in flight, the results."""

    def __init__(self, master: Master, opts: Options, progress: Progress,
                 clock: Callable[[], float]) -> None:
        self.master, self.opts, self.progress, self.clock = master, opts, progress, clock
        self.t0 = clock()
        self.results: dict[str, NodeResult] = {}
        self.todo: deque[str] = deque()
        self.flying: dict[str, _Flight] = {}
        self.kwargs: dict[str, Any] = {"test": True} if opts.test else {}
        self.window = self.total = 0
        self.last_lookup = self.last_note = 0.0

    def sort_keys(self, nodes: list[str]) -> None:
        """Nodes with an accepted key are to publish; the others are NO_KEY at once."""
        keys = self.master.keys()
        for n in nodes:
            if n in keys.accepted:
                self.todo.append(n)
            else:
                why = ("key pending, not accepted (salt-key -a)" if n in keys.pending else
                       "key rejected or denied" if n in keys.rejected else
                       "no key on the master (never installed, or deleted)")
                self.results[n] = NodeResult(node=n, status=Status.NO_KEY, why=why)
        if self.results:
            self.progress(f"{len(self.results)} node(s) without an accepted key: "
                          + ", ".join(list(self.results)[:8])
                          + (" ..." if len(self.results) > 8 else ""))
        self.window = self.opts.batch or len(self.todo) or 1
        self.last_lookup = self.clock()
        self.total = len(self.todo)

    def done(self, node: str, res: NodeResult) -> None:
        fl = self.flying.pop(node)
        res.jid = fl.jid
        if res.returned_s is None and res.status not in (Status.NO_RETURN, Status.LOST):
            res.returned_s = self.clock() - fl.published
        self.results[node] = res
        if res.status.bad:
            self.progress(f"{node}: {res.status.value}: {res.summary()}")

    def take(self, r: Return) -> None:
        fl = self.flying.get(r.node)
        if fl is None or fl.jid != r.jid:
            return
        self.done(r.node, _classify(r, self.opts))

    def publish(self) -> None:
        """The next nodes, as many as the window has room for."""
        flying, todo, opts = self.flying, self.todo, self.opts
        if not todo or len(flying) >= self.window:
            return
        batch = [todo.popleft() for _ in range(min(self.window - len(flying), len(todo)))]
        jid, expected = self.master.publish(batch, opts.fun, list(opts.args), self.kwargs)
        now = self.clock()
        for n in batch:
            flying[n] = _Flight(jid=jid, published=now, asked=now)
        for n in sorted(set(batch) - set(expected)):
            self.done(n, NodeResult(node=n, status=Status.NO_RETURN,
                                    why="the master did not target it (key accepted, but "
                                        "not in the publish's minion list)"))
        self.progress(f"published {opts.fun}{' test=True' if opts.test else ''} to "
                      f"{len(batch)} node(s), job {jid}")

    def lookups(self) -> None:
        """Every ``lookup_every``: the job cache's returns of the jobs in flight."""
        now = self.clock()
        if self.flying and now - self.last_lookup >= self.opts.lookup_every:
            self.last_lookup = now
            for jid in sorted({f.jid for f in self.flying.values()}):
                for r in self.master.lookup(jid).values():
                    self.take(r)

    def expire(self) -> None:
        """NO_RETURN for the nodes past ``timeout`` (unless the cache has it by now); and
        a progress note every 5 s."""
        now = self.clock()
        for n in [n for n, f in self.flying.items() if now - f.published > self.opts.timeout]:
            f = self.flying[n]
            late = self.master.lookup(f.jid).get(n)
            if late is not None:
                self.take(late)
                continue
            what = ("it still answered find_job" if f.answered else
                    "it never answered find_job either")
            self.done(n, NodeResult(node=n, status=Status.NO_RETURN,
                                    why=f"no return within {self.opts.timeout:g}s ({what})"))
        if now - self.last_note >= 5.0 and (self.flying or self.todo):
            self.last_note = now
            self.progress(_note(self.results, self.flying, self.todo, self.total,
                                now - self.t0))


def _classify(r: Return, opts: Options) -> NodeResult:
    if opts.fun.startswith("state."):
        return classify(r.node, r.ret, r.retcode, test=opts.test)
    return classify_plain(r.node, r.ret, r.retcode)


def _find_jobs(master: Master, flying: dict[str, _Flight], opts: Options,
               clock: Callable[[], float], done: Callable[[str, NodeResult], None]) -> None:
    """Ask the nodes silent for ``find_job_after`` whether they still run their job."""
    now = clock()
    due: dict[str, list[str]] = {}
    for n, f in flying.items():
        if now - f.asked >= opts.find_job_after:
            due.setdefault(f.jid, []).append(n)
    for jid, ns in sorted(due.items()):
        answers = master.running(jid, ns, opts.find_job_timeout)
        # the return may have come while we asked: the job cache says
        cached = master.lookup(jid)
        now = clock()
        for n in ns:
            if n not in flying:
                continue
            f = flying[n]
            if n in cached:
                done(n, _classify(cached[n], opts))
                continue
            f.asked = now
            if n not in answers:
                continue  # busy, restarting, or gone: the timeout decides
            f.answered = True
            f.gone = 0 if answers[n] else f.gone + 1
            if f.gone >= opts.lost_after:
                done(n, NodeResult(node=n, status=Status.LOST,
                                   why=f"answered {f.gone} times that it no longer runs job "
                                       f"{jid}, which it never returned"))


def _note(results: dict[str, NodeResult], flying: dict[str, _Flight], todo: deque[str],
          total: int, elapsed: float) -> str:
    counts: dict[str, int] = {}
    for r in results.values():
        if r.status is not Status.NO_KEY:
            counts[r.status.value] = counts.get(r.status.value, 0) + 1
    returned = sum(counts.values())
    parts = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    return (f"{returned}/{total} returned ({parts or 'none yet'}), {len(flying)} running"
            + (f", {len(todo)} waiting" if todo else "") + f" [{elapsed:.0f}s]")
