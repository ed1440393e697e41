"""``fleet status [TARGET]``: argparse glue; every source asked side by side, each bounded;
the table (problems first) and --json."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleet.cliparts import (
    Parents,
    add_bmc_options,
    add_bmc_pool,
    add_command,
    add_pxe_options,
    add_salt_config,
    add_salt_timeout,
    add_slurm_command,
    bmc_options,
    boot_mode_store,
)
from fleet.context import Context
from fleet.exitcodes import Exit

if TYPE_CHECKING:
    from fleet.inventory.model import Inventory
    from fleet.master.runner import Runner

DESCRIPTION = """
What state every node TARGET names is in. By default power, the BMCs' hardware facts
against the inventory (Redfish, every 15 minutes), boot mode, key, minion, Slurm and
alerts come from the collector on the master (fleet-status-collect.service, `fleet
status --collect`), each with its age; a source the collector has not had an answer from
for 3 of its intervals is unknown (stale), never its last value. --live asks every source
now, once for all the nodes, side by side, each within its time: power (the BMCs, as
`fleet power status`: --parallel at once, --deadline each), PXE boot mode, the minion's
key on the master (its key lists, as `salt-key -L`) and whether it is connected (the master's
own view, `salt-run manage.alived`: no job reaches a minion; --ping: whether it answers one
`salt test.ping`, --salt-timeout), Slurm's state and reason (one `scontrol show node`),
Prometheus's firing alerts. Always read now: the last `fleet apply` and `fleet health`
results kept, a reinstall or rollout working on it (or left unfinished), the inventory's
lifecycle state and the stage from discovery to service (a commissioning report waiting, burn-in's
progress, a failed check).
Nodes with problems come first, each problem named. A source that cannot be asked leaves
its column unknown (?), with the reason, and the others still show; Prometheus not
answering is only a note.
See docs/operations.md.
"""
EPILOG = """
exit codes: 0 no node has a problem (unknown columns are said, and do not fail), 1 invalid
inventory, 2 usage (a target item that names no node), 4 the Salt master could not be
asked (--live), or the cache not written (--collect), 5 a node has a problem
"""


def register(sub: Any, parents: Parents) -> None:
    from fleet.master import statedir

    p = add_command(sub, parents, "status", DESCRIPTION, EPILOG, target="'tbox-0*'")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--live", action="store_true",
                      help="ask every source now (as the collector does), not the collector")
    mode.add_argument("--collect", action="store_true",
                      help="be the collector: ask each source on its own interval (the BMCs "
                           "--parallel at once, spread over the interval; minion presence "
                           "from `salt-run manage.alived`, no job on the minions) and keep "
                           "the answers in the cache, until stopped")
    p.add_argument("--once", action="store_true",
                   help="with --collect: ask every source once, save the cache and exit")
    p.add_argument("--ping", action="store_true",
                   help="with --live: whether each minion answers one `salt test.ping` job "
                        "(a round trip through every minion, the slowest source at scale), "
                        "not whether the master sees it connected")
    p.add_argument("--no-power", action="store_true", help="do not ask the BMCs")
    p.add_argument("--no-alerts", action="store_true", help="do not ask Prometheus")
    p.add_argument("--hardware", action="store_true",
                   help="also ask each minion's hardware grains (one salt call) and each "
                        "Redfish BMC's hardware facts now (not the collector's), and compare "
                        "them with the inventory and profile: serial, MACs, memory, CPUs, "
                        "GPUs, HCA GUID, boot disk")
    p.add_argument("--prometheus", metavar="URL",
                   help="Prometheus to ask for alerts (default: http://<site.monitoring "
                        "host>:9090)")
    add_bmc_pool(p, parallel=32, deadline=15.0, bmc_timeout=5.0)
    add_salt_timeout(p, 10.0, "test.ping")
    for flag, where, what in (
            ("--apply-state-dir", statedir.APPLY, "fleet apply's results"),
            ("--health-state-dir", statedir.HEALTH, "fleet health's results"),
            ("--reinstall-state-dir", statedir.REINSTALL,
             "fleet reinstall's locks and journals"),
            ("--rollout-state-dir", statedir.ROLLOUT, "fleet rollout's journal"),
            ("--discover-reports", statedir.DISCOVER, "the commissioning reports"),
            ("--burnin-results", statedir.BURNIN, "the burn-in results"),
            ("--status-state-dir", statedir.STATUS, "the collector's cache")):
        p.add_argument(flag, type=Path, default=where.path(), metavar="DIR",
                       help=f"{what} (default ${where.env} or {where.default})")
    add_pxe_options(p, "reads")
    add_salt_config(p)
    add_slurm_command(p)
    add_bmc_options(p)


def _timed(fn: Callable[[], Any]) -> Callable[[], tuple[Any, str | None, bool, float]]:
    """``fn`` as a source: (values, error, the master down, seconds)."""
    from fleet.master.salt import MasterError
    from fleet.status.sources import SourceError

    def run() -> tuple[Any, str | None, bool, float]:
        t0 = time.monotonic()
        try:
            return fn(), None, False, time.monotonic() - t0
        except MasterError as exc:  # the master or its tools did not answer: exit 4
            return {}, str(exc), True, time.monotonic() - t0
        except SourceError as exc:
            return {}, str(exc), False, time.monotonic() - t0
        except Exception as exc:  # a bug in a source: its column, not the whole view
            return {}, f"internal error: {type(exc).__name__}: {exc}", False, \
                time.monotonic() - t0
    return run


def _usage_error(args: argparse.Namespace) -> str | None:
    if args.parallel < 1 or min(args.deadline, args.bmc_timeout, args.salt_timeout) <= 0:
        return ("--parallel must be at least 1; --deadline, --bmc-timeout and "
                "--salt-timeout above 0")
    if args.once and not args.collect:
        return "--once is for --collect"
    if args.ping and not args.live:
        return "--ping is for --live"
    return None


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.inventory.lifecycle import default_target
    from fleet.status import view

    explicit = args.target is not None
    inv, names = ctx.targets()
    wrong = _usage_error(args)
    if wrong is not None:
        print(f"fleet: {wrong}", file=sys.stderr)
        return Exit.USAGE
    left = {} if explicit else default_target(inv, "status")[1]
    jobs, skipped = _jobs(args, inv, names, ctx.runner())
    if args.collect:
        return _collect(args, ctx, jobs, names)
    t0 = time.monotonic()
    cached: dict[str, Any] = {}
    if not args.live:
        from fleet.status.codec import COLLECTED

        now = {"bmc_hardware"} if args.hardware else set()  # --hardware: asked now
        jobs = {k: v for k, v in jobs.items() if k not in COLLECTED or k in now}
        cached = _cached(_cache(args), names, skipped | dict.fromkeys(now, "asked now"))
    ctx.progress(f"status of {len(names)} node(s): asking {', '.join(jobs)}"
                 + ("" if args.live else "; the rest from the collector"))
    cols, notes, master_down = _ask(jobs, skipped, ctx.progress, cached)
    wall = time.monotonic() - t0
    rs = view.rows([(n, inv.nodes[n].state, inv.nodes[n].has("slurm.compute"))
                    for n in names], cols)
    from fleet.backup.run import last, last_line
    from fleet.inventory import masters as active

    masters = active.masters(inv)
    if args.json:
        ctx.out.emit({**_document(view.document(args.target, rs, cols, wall, notes, left)),
                      "backup": last(), "master": active.document(masters)})
    elif not args.quiet:
        print(view.table(rs, cols, wall, notes))
        print(last_line(last()))
        print(active.status_line(masters))
    else:
        for r in rs:
            if r.problems:
                print(f"{r.node}: {'; '.join(r.problems)}", file=sys.stderr)
    if master_down:
        why = "the Salt master could not be asked (keys and minions unknown)"
        ctx.out.error(why)
        print(f"fleet: {why}", file=sys.stderr)
        return Exit.IO
    return Exit.FAILED if any(r.problems for r in rs) else Exit.OK


def _cache(args: argparse.Namespace) -> Path:
    from fleet.status.service import CACHE_NAME

    return Path(args.status_state_dir) / CACHE_NAME


def _cached(path: Path, names: list[str], skipped: dict[str, str]) -> dict[str, Any]:
    """The collected sources' columns from the cache, each with its age; a stale or
    unanswered source is unknown, with why."""
    from fleet.status import codec, collector, view
    from fleet.status.service import INTERVALS

    def never() -> dict[str, Any]:
        raise AssertionError("the reader never asks a source")

    entries = collector.load(path)
    c = collector.Collector([collector.Source(n, INTERVALS[n], never)
                             for n in codec.COLLECTED], entries=entries)
    cols: dict[str, Any] = {}
    for name in codec.COLLECTED:
        if name in skipped:
            continue
        r = c.reading(name)
        if r.column.error is not None:
            why = r.column.error
            if not entries:
                why = (f"no collector cache at {path} (is fleet-status-collect.service "
                       "running on the master? --live asks every source now)")
            cols[name] = view.Column(error=why, age=r.age)
            continue
        try:
            values = codec.decode(name, r.column.values)
        except ValueError as exc:
            cols[name] = view.Column(error=f"{path}: {exc}")
            continue
        keep = set(names) | {""}  # "": the site-wide alerts
        cols[name] = view.Column({n: v for n, v in values.items() if n in keep}, age=r.age)
    return cols


def _collect(args: argparse.Namespace, ctx: Context, jobs: dict[str, Callable[[], Any]],
             names: list[str]) -> Exit:
    """The collector: the collected sources (minion: presence, power: spread) on their
    intervals, into the cache; --once: each once."""
    import threading

    from fleet.status import codec, collector, service
    from fleet.status.sources import SourceError

    path = _cache(args)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"fleet: {path.parent}: {exc.strerror or exc}", file=sys.stderr)
        return Exit.IO

    def source(name: str, fn: Callable[[], Any]) -> collector.Source:
        ask = _timed(fn)

        def run() -> dict[str, Any]:
            values, error, _down, _secs = ask()
            if error is not None:
                raise SourceError(error)
            return codec.encode(name, values)
        return collector.Source(name, service.INTERVALS[name], run)

    sources = [source(n, fn) for n, fn in jobs.items() if n in codec.COLLECTED]
    c = collector.Collector(sources, entries=collector.load(path))
    ctx.progress(f"collecting {', '.join(s.name for s in sources)} of {len(names)} node(s) "
                 f"into {path}")
    try:
        if args.once:
            service.once(c, path)
        else:
            from fleet.signals import SignalCatcher

            stop = threading.Event()
            svc = service.Service(c, path, progress=ctx.progress,
                                  warn=lambda m: print(f"fleet status --collect: {m}",
                                                       file=sys.stderr, flush=True))
            with SignalCatcher(ctx.progress, lambda _signum: stop.set(),
                               again="the collector is stopping"):
                svc.run(stop, until=_changed(Path(args.inventory)))
            svc.pool.shutdown(wait=False, cancel_futures=True)
            if not stop.is_set():  # its unit starts it again (Restart=always)
                print(f"fleet status --collect: {args.inventory} changed: stopping, to "
                      "collect its nodes", file=sys.stderr)
    except OSError as exc:
        print(f"fleet: {path}: not written: {exc.strerror or exc}", file=sys.stderr)
        return Exit.IO
    failed = {n: e.error for n, e in c.entries.items() if e.error}
    if args.json:
        ctx.out.emit({"ok": not failed, "cache": str(path), "failed": failed})
    elif not args.quiet:
        for n, why in failed.items():
            print(f"{n}: {why}", file=sys.stderr)
        print(f"{path}: {len(sources) - len(failed)} of {len(sources)} source(s) answered")
    return Exit.OK


def _changed(path: Path) -> Callable[[], bool]:
    """Whether ``path`` changed since now (its mtime and size; gone counts as changed)."""
    def sig() -> tuple[int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    first = sig()
    return lambda: sig() != first


def _jobs(args: argparse.Namespace, inv: Inventory, names: list[str], runner: Runner
          ) -> tuple[dict[str, Callable[[], Any]], dict[str, str]]:
    """Each source to ask, as a call; the sources skipped, with why. The minion column is
    the master's view of its connections (one test.ping job on each with --ping); the
    collector's (--collect) BMC round is spread."""
    from fleet.master.salt import gather_job_timeout
    from fleet.status import sources
    from fleet.status.service import HARDWARE_SPREAD, INTERVALS, POWER_SPREAD

    jobs: dict[str, Callable[[], Any]] = {"stage": _stage_job(args, inv, names)}
    if args.hardware:
        jobs["hardware"] = _hardware_job(args, inv, names, runner)
    skipped: dict[str, str] = {}
    if args.no_power:
        skipped["power"] = skipped["bmc_hardware"] = "--no-power"
    else:
        from fleet.bmc.base import BmcClient
        from fleet.bmc.connect import client_for

        def client(name: str) -> BmcClient:
            return client_for(inv.nodes[name], bmc_options(args, name,
                                                           timeout=args.bmc_timeout))

        spread = INTERVALS["power"] * POWER_SPREAD if args.collect else 0.0
        jobs["power"] = lambda: sources.power(names, client, parallel=args.parallel,
                                              deadline=args.deadline, secrets=args.secrets,
                                              spread=spread)
        if args.collect or args.hardware:
            # the collector's round is spread; --once and --live read every BMC now
            hw_spread = INTERVALS["bmc_hardware"] * HARDWARE_SPREAD \
                if args.collect and not args.once else 0.0
            jobs["bmc_hardware"] = lambda: sources.bmc_hardware(
                inv, names, client, parallel=args.parallel, spread=hw_spread,
                secrets=args.secrets)
    store = boot_mode_store(args, inv)
    jobs["boot"] = lambda: sources.boot_modes(store, names)
    jobs["key"] = lambda: sources.keys(args.salt_config, names)
    if args.ping:
        jobs["minion"] = lambda: sources.ping(
            runner, names, args.salt_timeout, gather_job_timeout(args.salt_config))
    else:  # the master's own view: no job on 144 minions for each look
        jobs["minion"] = lambda: sources.presence(runner, names)
    if any(inv.nodes[n].has("slurm.compute") for n in names):
        jobs["slurm"] = lambda: sources.slurm(runner, names)
    jobs["apply"] = lambda: sources.last(args.apply_state_dir, "apply", names)
    jobs["health"] = lambda: sources.last(args.health_state_dir, "health", names)
    jobs["work"] = lambda: sources.work(args.reinstall_state_dir, args.rollout_state_dir,
                                        names)
    if args.no_alerts:
        skipped["alerts"] = "--no-alerts"
    else:
        url = args.prometheus
        if url is None:
            from fleet.monitoring.alerts import prometheus_url

            url = prometheus_url(inv)
        jobs["alerts"] = lambda: sources.alerts(url, names, timeout=args.salt_timeout)
    return jobs, skipped


def _stage_job(args: argparse.Namespace, inv: Inventory, names: list[str]
               ) -> Callable[[], Any]:
    """Each node's stage (discovered, burn-in and its progress, failed) from the reports
    and the burn-in results kept here (fleet.status.stage)."""
    from fleet.status import stage

    return lambda: stage.stages(inv, names, args.discover_reports, args.burnin_results)


def _hardware_job(args: argparse.Namespace, inv: Inventory, names: list[str],
                  runner: Runner) -> Callable[[], Any]:
    """Each node's hardware drift from its grains (fleet.status.hardware)."""
    from fleet.master.salt import gather_job_timeout
    from fleet.status import hardware

    return lambda: hardware.drift(runner, inv, names, args.salt_timeout,
                                  gather_job_timeout(args.salt_config))


def _ask(jobs: dict[str, Callable[[], Any]], skipped: dict[str, str],
         progress: Callable[[str], None], cached: dict[str, Any]
         ) -> tuple[dict[str, Any], list[str], bool]:
    """Every source at once, each bounded (or its ``cached`` column): its column, the
    notes, whether the master was down."""
    from concurrent.futures import ThreadPoolExecutor

    from fleet.status import view

    cols: dict[str, view.Column] = {}
    notes: list[str] = []
    master_down = False
    with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        futures = {name: pool.submit(_timed(fn)) for name, fn in jobs.items()}
        for name in view.SOURCES:
            if name in skipped:
                cols[name] = view.Column(skipped=skipped[name])
            if name in cached:
                col = cached[name]
                if name == "alerts" and col.error is not None:
                    notes.append(f"alerts not shown: {col.error}")
                    col = view.Column(skipped="Prometheus did not answer", age=col.age)
                cols[name] = col
            if name not in futures:
                continue
            values, error, down, secs = futures[name].result()
            master_down |= down
            progress(f"{name}: {'unknown: ' + error if error else 'answered'} ({secs:.1f}s)")
            if name == "alerts" and error is not None:  # no monitoring here: a note
                notes.append(f"alerts not shown: {error}")
                cols[name] = view.Column(skipped="Prometheus did not answer", seconds=secs)
            else:
                cols[name] = view.Column(values, error, seconds=secs)
    return cols, notes, master_down


def _document(doc: dict[str, Any]) -> dict[str, Any]:
    """The view's document, each node in the common shape (no time of its own: every
    source is asked for all the nodes at once)."""
    from fleet.output import node_entry

    doc["nodes"] = [node_entry(n["node"], n["status"], None, n["problems"], n)
                    for n in doc["nodes"]]
    return doc
