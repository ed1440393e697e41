"""``fleet health [TARGET] [--drain] [--resume]``: argparse glue, the table and --json."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleet.cliparts import (
    Parents,
    add_command,
    add_salt_options,
    add_state_dir,
)
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.master import statedir
from fleet.output import node_entry
from fleet.signals import long_verb

if TYPE_CHECKING:
    from fleet.health.run import Outcome


DESCRIPTION = """
The health gate of the inventory nodes TARGET names, one Salt call per check across all of
them: GPU count and persistence mode, NVIDIA Xid errors since boot, InfiniBand ports (these
three skipped, and said so, where pillar fleet:hardware is false), slurmd active and
registered with its GRES, munge, time sync (chrony), mkv volumes answering with every data
disk mounted, and the head node's services. --drain drains unhealthy Slurm nodes (reason
'fleet health: ...'); --resume resumes nodes drained that way once they pass, never a node
drained otherwise. Each node's result is kept in --state-dir for `fleet status`. See
docs/operations.md.
"""
EPILOG = """
exit codes: 0 every node healthy, 1 invalid inventory, 2 usage (a target item that names no
node), 4 the Salt master could not be reached, 5 a node is unhealthy (with --drain: and
drained if it is a Slurm node)
"""

# what a SIGINT/SIGTERM leaves (fleet.signals.long_verb)
STOPPED = ('the nodes drained or resumed before it are in the journal under --state-dir; '
           'checks in flight end on their Salt timeout; run `fleet health` again')


def register(sub: Any, parents: Parents) -> None:
    p = add_command(sub, parents, "health", DESCRIPTION, EPILOG, target="'stor-*'")
    p.add_argument("--drain", action="store_true",
                   help="drain unhealthy Slurm nodes, the problems as the reason")
    p.add_argument("--resume", action="store_true",
                   help="resume the healthy nodes that `fleet health --drain` drained")
    add_state_dir(p, statedir.HEALTH,
                  "the journal of drains and resumes, each node's last result")
    add_salt_options(p)


@long_verb(STOPPED)
def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.health.run import gate
    from fleet.master.salt import MasterError

    progress = ctx.progress
    inv, names = ctx.targets()
    t0 = time.monotonic()
    progress(f"{len(names)} node(s) targeted; asking through {args.salt_config}")
    try:
        runner = ctx.runner()
        outcome = gate(inv, names, runner, progress, drain=args.drain,
                       resume=args.resume, state_dir=args.state_dir,
                       salt_timeout=args.salt_timeout)
    except MasterError as exc:
        print(f"fleet: the Salt master could not be asked: {exc}", file=sys.stderr)
        return Exit.IO
    wall = time.monotonic() - t0
    keep(args.state_dir, outcome)
    bad = [r for r in outcome.reports if not r.healthy]
    if args.json:
        ctx.out.emit(as_json(outcome, args.target, wall))
    elif not args.quiet:
        print(outcome.table(wall))
    else:
        for r in bad:
            print(f"{r.node}: unhealthy: {'; '.join(r.problems)}", file=sys.stderr)
    for a in outcome.failed_actions:
        print(f"fleet: {a}", file=sys.stderr)
    return Exit.FAILED if bad or outcome.failed_actions else Exit.OK


def as_json(outcome: Outcome, target: str, wall: float) -> dict[str, Any]:
    """The gate's document, each node in the common shape (its problems; no time of its
    own: the checks run across all the nodes at once)."""
    doc = outcome.as_json(target, wall)
    doc["nodes"] = [node_entry(r.node, "healthy" if r.healthy else "unhealthy", None,
                               r.problems, n) for r, n in zip(outcome.reports, doc["nodes"],
                                                              strict=True)]
    return doc


def keep(state_dir: Path, outcome: Outcome) -> None:
    """Each node's result for `fleet status` (fleet.lastrun.keep)."""
    from fleet import lastrun

    lastrun.keep(state_dir, "health", (
        (r.node, "healthy" if r.healthy else "unhealthy", r.healthy, "; ".join(r.problems))
        for r in outcome.reports))
