"""Run the highstate on a list of nodes and account for every one of them.

Publish asynchronously (in windows of ``--batch N``: our own sliding window, not Salt's
batch mode), take returns from the event bus as they come, look every job up in the
master's job cache as well (a return the bus dropped is still there), and ask a silent
minion with ``saltutil.find_job`` whether it still runs the job. A node ends as one of
the statuses of :mod:`fleet.apply.result`; nothing is left unaccounted."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fleet.apply.master import Master, Return
from fleet.apply.result import NodeResult, Status, classify, classify_plain


@dataclass(frozen=True, slots=True)
class Options:
    fun: str = "state.apply"
    args: tuple[str, ...] = ()
    test: bool = False
    batch: int | None = None        # at most this many nodes running at once
    timeout: float = 1800.0         # seconds from a node's publish to giving up on it
    lookup_every: float = 10.0      # job cache lookups of the jobs still waiting
    find_job_after: float = 30.0    # ask a silent node with find_job after this long,
    find_job_timeout: float = 15.0  # waiting this long for its answer
    lost_after: int = 2             # "not running it" answers, in a row, before "lost"


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
    t0 = clock()
    keys = master.keys()
    results: dict[str, NodeResult] = {}
    todo: deque[str] = deque()
    for n in nodes:
        if n in keys.accepted:
            todo.append(n)
        else:
            why = ("key pending, not accepted (salt-key -a)" if n in keys.pending else
                   "key rejected or denied" if n in keys.rejected else
                   "no key on the master (never installed, or deleted)")
            results[n] = NodeResult(node=n, status=Status.NO_KEY, why=why)
    if results:
        progress(f"{len(results)} node(s) without an accepted key: "
                 + ", ".join(list(results)[:8]) + (" ..." if len(results) > 8 else ""))
    window = opts.batch or len(todo) or 1
    kwargs: dict[str, Any] = {"test": True} if opts.test else {}
    flying: dict[str, _Flight] = {}
    last_lookup = clock()
    last_note = 0.0
    total = len(todo)

    def done(node: str, res: NodeResult) -> None:
        fl = flying.pop(node)
        res.jid = fl.jid
        if res.returned_s is None and res.status not in (Status.NO_RETURN, Status.LOST):
            res.returned_s = clock() - fl.published
        results[node] = res
        if res.status.bad:
            progress(f"{node}: {res.status.value}: {res.summary()}")

    def take(r: Return) -> None:
        fl = flying.get(r.node)
        if fl is None or fl.jid != r.jid:
            return
        done(r.node, _classify(r, opts))

    while todo or flying:
        if todo and len(flying) < window:
            batch = [todo.popleft() for _ in range(min(window - len(flying), len(todo)))]
            jid, expected = master.publish(batch, opts.fun, list(opts.args), kwargs)
            now = clock()
            for n in batch:
                flying[n] = _Flight(jid=jid, published=now, asked=now)
            for n in sorted(set(batch) - set(expected)):
                done(n, NodeResult(node=n, status=Status.NO_RETURN,
                                   why="the master did not target it (key accepted, but "
                                       "not in the publish's minion list)"))
            progress(f"published {opts.fun}{' test=True' if opts.test else ''} to "
                     f"{len(batch)} node(s), job {jid}")
        for r in master.events(wait=0.5):
            take(r)
        now = clock()
        if flying and now - last_lookup >= opts.lookup_every:
            last_lookup = now
            for jid in sorted({f.jid for f in flying.values()}):
                for r in master.lookup(jid).values():
                    take(r)
        _find_jobs(master, flying, opts, clock, done)
        now = clock()
        for n in [n for n, f in flying.items() if now - f.published > opts.timeout]:
            f = flying[n]
            late = master.lookup(f.jid).get(n)
            if late is not None:
                take(late)
                continue
            what = ("it still answered find_job" if f.answered else
                    "it never answered find_job either")
            done(n, NodeResult(node=n, status=Status.NO_RETURN,
                               why=f"no return within {opts.timeout:g}s ({what})"))
        if now - last_note >= 5.0 and (flying or todo):
            last_note = now
            progress(_note(results, flying, todo, total, now - t0))
    return [results[n] for n in nodes]


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
