"""``fleet status [TARGET]``: argparse glue; every source asked side by side, each bounded;
the table (problems first) and --json."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fleet.cliparts import (
    Loader,
    add_bmc_options,
    add_bmc_pool,
    add_command,
    add_pxe_options,
    add_salt_config,
    add_slurm_command,
    bmc_options,
    boot_mode_store,
    target_nodes,
)
from fleet.exitcodes import Exit
from fleet.inventory.model import Inventory

HELP = "one row per node: power, boot mode, key, minion, Slurm, last apply/health, alerts"
DESCRIPTION = """
What state every node TARGET names is in, from every live source, each asked once for all
of them, side by side, each within its time: power (the BMCs, as `fleet power status`:
--parallel at once, --deadline each), PXE boot mode, the minion's key on the master
(`salt-key -L`) and whether it answers (one `salt test.ping`, --salt-timeout), Slurm's
state and reason (one `scontrol show node`), the last `fleet apply` and `fleet health`
results they kept, a reinstall or rollout working on it (or left unfinished), the
inventory's lifecycle state, and Prometheus's firing alerts. Nodes with problems come
first, each problem named. A source that cannot be asked leaves its column unknown (?),
with the reason, and the others still show; Prometheus not answering is only a note.
See docs/operations.md.
"""
EPILOG = """
exit codes: 0 no node has a problem (unknown columns are said, and do not fail), 1 invalid
inventory, 2 usage (a target item that names no node), 4 the Salt master could not be
asked, 5 a node has a problem
"""


def _env_path(name: str, default: str) -> Path:
    return Path(os.environ.get(name, default))


def add_parser(sub: Any, common: argparse.ArgumentParser, load: Loader) -> None:
    from fleet.apply.cli import DEFAULT_STATE as APPLY_STATE
    from fleet.health.cli import DEFAULT_STATE as HEALTH_STATE
    from fleet.reinstall.cli import DEFAULT_STATE as REINSTALL_STATE
    from fleet.rollout.cli import DEFAULT_STATE as ROLLOUT_STATE

    p = add_command(sub, common, "status", HELP, DESCRIPTION, EPILOG, target="'tbox-0*'")
    p.add_argument("--no-power", action="store_true", help="do not ask the BMCs")
    p.add_argument("--no-alerts", action="store_true", help="do not ask Prometheus")
    p.add_argument("--prometheus", metavar="URL",
                   help="Prometheus to ask for alerts (default: http://<site.monitoring "
                        "host>:9090)")
    add_bmc_pool(p, parallel=32, deadline=15.0, bmc_timeout=5.0)
    p.add_argument("--salt-timeout", type=float, default=10.0, metavar="S",
                   help="seconds test.ping waits for the minions (default 10)")
    for flag, env, default, what in (
            ("--apply-state-dir", "FLEET_APPLY_STATE", APPLY_STATE, "fleet apply's results"),
            ("--health-state-dir", "FLEET_HEALTH_STATE", HEALTH_STATE,
             "fleet health's results"),
            ("--reinstall-state-dir", "FLEET_REINSTALL_STATE", REINSTALL_STATE,
             "fleet reinstall's locks and journals"),
            ("--rollout-state-dir", "FLEET_ROLLOUT_STATE", ROLLOUT_STATE,
             "fleet rollout's journal")):
        p.add_argument(flag, type=Path, default=_env_path(env, default), metavar="DIR",
                       help=f"{what} (default ${env} or {default})")
    add_pxe_options(p, "reads")
    add_salt_config(p)
    add_slurm_command(p)
    add_bmc_options(p)
    p.set_defaults(func=lambda a, pr: cmd_status(a, load(a, pr), pr))


def _accepted_dir(config: Path) -> Path:
    from fleet.reinstall.cli import _pki_dir

    return _pki_dir(config) / "minions"


def _timed(fn: Callable[[], Any]) -> Callable[[], tuple[Any, str | None, bool, float]]:
    """``fn`` as a source: (values, error, the master down, seconds)."""
    from fleet.status.sources import MasterDownError, SourceError

    def run() -> tuple[Any, str | None, bool, float]:
        t0 = time.monotonic()
        try:
            return fn(), None, False, time.monotonic() - t0
        except MasterDownError as exc:
            return {}, str(exc), True, time.monotonic() - t0
        except SourceError as exc:
            return {}, str(exc), False, time.monotonic() - t0
        except Exception as exc:  # a bug in a source: its column, not the whole view
            return {}, f"internal error: {type(exc).__name__}: {exc}", False, \
                time.monotonic() - t0
    return run


# complexity 17: debt, to split (pyproject.toml [tool.fleet.lint.exceptions])
def cmd_status(args: argparse.Namespace, inv: Inventory,  # noqa: C901
               progress: Callable[[str], None]) -> int:
    from concurrent.futures import ThreadPoolExecutor

    from fleet.inventory.lifecycle import default_target
    from fleet.reinstall.cli import runner_for
    from fleet.status import sources, view

    explicit = args.target is not None
    names = target_nodes(args, inv)
    if names is None:
        return Exit.USAGE
    if args.parallel < 1 or min(args.deadline, args.bmc_timeout, args.salt_timeout) <= 0:
        print("fleet: --parallel must be at least 1; --deadline, --bmc-timeout and "
              "--salt-timeout above 0", file=sys.stderr)
        return Exit.USAGE
    left = {} if explicit else default_target(inv, "status")[1]
    runner = runner_for(args)
    notes: list[str] = []
    jobs: dict[str, Callable[[], Any]] = {}
    skipped: dict[str, str] = {}
    if args.no_power:
        skipped["power"] = "--no-power"
    else:
        from fleet.bmc.base import BmcClient
        from fleet.bmc.connect import client_for

        def client(name: str) -> BmcClient:
            return client_for(inv.nodes[name], bmc_options(args, name,
                                                           timeout=args.bmc_timeout))

        jobs["power"] = lambda: sources.power(names, client, parallel=args.parallel,
                                              deadline=args.deadline, secrets=args.secrets)
    store = boot_mode_store(args, inv)
    jobs["boot"] = lambda: sources.boot_modes(store, names)
    jobs["key"] = lambda: sources.keys(runner, names, _accepted_dir(args.salt_config))
    jobs["minion"] = lambda: sources.ping(
        runner, names, args.salt_timeout, sources.gather_job_timeout(args.salt_config))
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
    t0 = time.monotonic()
    progress(f"status of {len(names)} node(s): asking {', '.join(jobs)}")
    cols: dict[str, view.Column] = {}
    master_down = False
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {name: pool.submit(_timed(fn)) for name, fn in jobs.items()}
        for name in view.SOURCES:
            if name in skipped:
                cols[name] = view.Column(skipped=skipped[name])
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
    wall = time.monotonic() - t0
    rs = view.rows([(n, inv.nodes[n].state, inv.nodes[n].has("slurm.compute"))
                    for n in names], cols)
    if args.json:
        print(json.dumps(view.document(args.target, rs, cols, wall, notes, left), indent=2))
    elif not args.quiet:
        print(view.table(rs, cols, wall, notes))
    else:
        for r in rs:
            if r.problems:
                print(f"{r.node}: {'; '.join(r.problems)}", file=sys.stderr)
    if master_down:
        print("fleet: the Salt master could not be asked (keys and minions unknown)",
              file=sys.stderr)
        return Exit.IO
    return Exit.FAILED if any(r.problems for r in rs) else Exit.OK
