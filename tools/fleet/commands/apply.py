"""``fleet apply [TARGET] [--test] [--batch N]``: argparse glue, the table and --json."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleet.cliparts import Parents, add_command, add_salt_config, add_state_dir
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.master import statedir
from fleet.output import highstate_node
from fleet.signals import long_verb

if TYPE_CHECKING:
    from fleet.master.highstate import NodeResult


DESCRIPTION = """
Run state.apply (the highstate) on the inventory nodes TARGET names, through the Salt
master, and report every one of them: ok, changed, failed (which state, and why), no-return,
lost (the minion dropped the job), no-key (not accepted on the master: not published).
Returns come from the master's event bus and its job cache; Salt's batch mode is not used.
Each node's result (not with --test) is kept in --state-dir for `fleet status`. See
docs/operations.md.
"""
EPILOG = """
exit codes: 0 every node ok or changed, 1 invalid inventory, 2 usage (a target item that
names no node), 4 the master could not be reached, 5 a node failed, did not return, or has
no accepted key; 130 interrupted (jobs already published keep running on the nodes)
"""

# what a SIGINT/SIGTERM leaves (fleet.signals.long_verb)
STOPPED = ("highstate runs already sent go on on their minions: run `fleet apply` again "
           "for every node's verdict")


def register(sub: Any, parents: Parents) -> None:
    p = add_command(sub, parents, "apply", DESCRIPTION, EPILOG, target="'stor-*'")
    p.add_argument("--test", action="store_true",
                   help="state.apply test=True: report what would change, change nothing")
    p.add_argument("--batch", type=int, metavar="N",
                   help="at most N nodes running at once (a sliding window: the next node "
                        "starts when one returns)")
    p.add_argument("--timeout", type=float, default=1800.0, metavar="S",
                   help="give up on a node S seconds after its publish (default 1800)")
    add_state_dir(p, statedir.APPLY,
                  "where each node's last result is kept (<dir>/<node>/last.json)")
    add_salt_config(p)


@long_verb(STOPPED)
def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.apply.run import Options, apply
    from fleet.master.pyclient import SaltMaster
    from fleet.master.salt import MasterError

    progress = ctx.progress
    nodes = ctx.targets()[1]
    if args.batch is not None and args.batch < 1:
        print("fleet: --batch must be at least 1", file=sys.stderr)
        return Exit.USAGE
    opts = Options(test=args.test, batch=args.batch, timeout=args.timeout)
    t0 = time.monotonic()
    progress(f"{len(nodes)} node(s) targeted; connecting to the master ({args.salt_config})")
    try:
        master = SaltMaster(args.salt_config)
        try:
            results = apply(master, nodes, opts, progress)
        finally:
            master.close()
    except MasterError as exc:
        print(f"fleet: {exc}", file=sys.stderr)
        return Exit.IO
    wall = time.monotonic() - t0
    if not args.test:
        keep(args.state_dir, results)
    bad = [r for r in results if r.status.bad]
    if args.json:
        ctx.out.emit(as_json(args.target, args.test, wall, results))
    elif not args.quiet:
        print(format_table(results, wall, test=args.test))
    elif bad:
        for r in bad:
            print(f"{r.node}: {r.status.value}: {r.summary()}", file=sys.stderr)
    return Exit.FAILED if bad else Exit.OK


def keep(state_dir: Path, results: list[NodeResult]) -> None:
    """Each node's result for `fleet status` (fleet.lastrun.keep)."""
    from fleet import lastrun

    lastrun.keep(state_dir, "apply", ((r.node, r.status.value, not r.status.bad,
                                       r.summary()) for r in results))


def counts(results: list[NodeResult]) -> dict[str, int]:
    from fleet.master.highstate import Status

    return {s.value: sum(1 for r in results if r.status is s) for s in Status}


def as_json(target: str, test: bool, wall: float,
            results: list[NodeResult]) -> dict[str, Any]:
    return {"ok": not any(r.status.bad for r in results), "target": target, "test": test,
            "wall_s": round(wall, 2), "counts": counts(results),
            "nodes": [highstate_node(r) for r in results]}



def _secs(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def format_table(results: list[NodeResult], wall: float, *, test: bool) -> str:
    """Problems first (failed, lost, no-return, no-key), then the rest, in target order."""
    from fleet.master.highstate import Status

    order = {Status.FAILED: 0, Status.LOST: 1, Status.NO_RETURN: 2, Status.NO_KEY: 3,
             Status.CHANGED: 4, Status.OK: 5}
    rows = sorted(results, key=lambda r: order[r.status])
    width = max([len(r.node) for r in rows] + [4])
    head = f"{'node':<{width}}  {'status':<9}  states  {'changed' if not test else 'would'}  " \
           f"return_s  run_s  detail"
    lines = [head]
    for r in rows:
        lines.append(f"{r.node:<{width}}  {r.status.value:<9}  {r.states:>6}  {r.changed:>7}  "
                     f"{_secs(r.returned_s):>8}  {_secs(r.run_s):>5}  {r.summary()}".rstrip())
        for f in r.failed[1:]:
            lines.append(f"{'':<{width}}  {'':<9}  {'':>6}  {'':>7}  {'':>8}  {'':>5}  "
                         f"{f.state_id} ({f.function}): {' '.join(f.comment.split())[:160]}")
    c = counts(results)
    returned = [r.returned_s for r in results if r.returned_s is not None]
    slowest = max(returned, default=None)
    lines.append("")
    lines.append(f"{len(results)} node(s): " + ", ".join(f"{v} {k}" for k, v in c.items() if v)
                 + f"; {wall:.1f}s wall" + (f", slowest return {slowest:.1f}s"
                                            if slowest is not None else ""))
    return "\n".join(lines)
