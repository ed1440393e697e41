"""``fleet power on|off|cycle|reset|status TARGET``: argparse glue, the table and --json."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from fleet.bmc.limits import REQUEST_TIMEOUT
from fleet.cliparts import (
    Parents,
    add_bmc_options,
    add_bmc_pool,
    add_command,
    add_force,
    add_pxe_options,
    add_salt_config,
    add_slurm_command,
    bmc_options,
    boot_mode_store,
)
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.ops.power import ACTIONS, Action, NodeResult, Status
from fleet.output import node_entry
from fleet.signals import long_verb

DESCRIPTION = """
Send one power action to the BMC of every node TARGET names (Redfish or IPMI, as the
profile says; the password from the secrets store, never on a command line or in a log),
at most --parallel at once, each node within --deadline seconds: a BMC that does not answer
costs its node the deadline and holds no other. One result per node: done, already (in that
state; nothing sent), refused, failed (and why). off, cycle and reset are refused, unless
--force, on the provisioning host, the Salt master and the head roles, on a node whose PXE
boot mode is install or cannot be read, and on a Slurm compute node with jobs on it (or
whose jobs Slurm cannot be asked about); status and on never are. See docs/operations.md.
"""
EPILOG = """
exit codes: 0 every node done or already in that state, 1 invalid inventory, 2 usage (a
target item that names no node), 5 a node was refused or failed
"""


def register(sub: Any, parents: Parents) -> None:
    p = add_command(sub, parents, "power", DESCRIPTION, EPILOG)
    p.add_argument("action", choices=ACTIONS, metavar="ACTION",
                   help="on | off (at once, no OS shutdown) | cycle (off then on; a node "
                        "that is off is powered on) | reset (hard reset of a node that is "
                        "on) | status")
    p.add_argument("target", metavar="TARGET",
                   help="inventory hostnames, ranges (tbox-[001-038]) or globs ('tbox-0*'), "
                        "comma-separated")
    add_force(p, "power")
    add_bmc_pool(p, parallel=16, deadline=60.0, bmc_timeout=REQUEST_TIMEOUT)
    add_pxe_options(p, "reads (off, cycle, reset)")
    add_slurm_command(p)
    add_bmc_options(p)
    add_salt_config(p)  # unused by power itself: the shared runner is built from it


# what a SIGINT/SIGTERM leaves (fleet.signals.long_verb)
STOPPED = ('an action already sent to a BMC may still take effect, and a node drained for it'
           ' stays drained (`fleet power status`, `sinfo -n NODE`)')


@long_verb(STOPPED)
def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.bmc.base import BmcClient
    from fleet.bmc.connect import client_for
    from fleet.ops import power, refusals

    progress = ctx.progress
    inv, names = ctx.targets()
    if args.parallel < 1 or args.deadline <= 0 or args.bmc_timeout <= 0:
        print("fleet: --parallel must be at least 1, --deadline and --bmc-timeout above 0",
              file=sys.stderr)
        return Exit.USAGE
    action: Action = args.action
    runner = ctx.runner()
    modes = boot_mode_store(args, inv)

    def client(name: str) -> BmcClient:
        return client_for(inv.nodes[name], bmc_options(args, name, timeout=args.bmc_timeout))

    def refused(name: str) -> list[str]:
        if args.force:
            return []
        return refusals.refusals(inv, inv.nodes[name], runner, modes)

    t0 = time.monotonic()
    progress(f"power {action}: {len(names)} node(s), {args.parallel} at once")
    results = power.run(names, action, client, refused, parallel=args.parallel,
                        deadline=args.deadline, progress=progress)
    wall = time.monotonic() - t0
    bad = [r for r in results if r.status.bad]
    if args.json:
        ctx.out.emit(as_json(args.target, action, args.force, wall, results))
    elif not args.quiet:
        print(format_table(results, wall, action))
    else:
        for r in bad:
            print(f"{r.node}: {r.status.value}: {'; '.join(r.problems)}", file=sys.stderr)
    return Exit.FAILED if bad else Exit.OK


def counts(results: list[NodeResult]) -> dict[str, int]:
    return {s.value: sum(1 for r in results if r.status is s) for s in Status}


def as_json(target: str, action: str, force: bool, wall: float,
            results: list[NodeResult]) -> dict[str, Any]:
    return {"ok": not any(r.status.bad for r in results), "target": target, "action": action,
            "force": force, "wall_s": round(wall, 2), "counts": counts(results),
            "nodes": [node_entry(r.node, r.status.value, r.seconds, r.problems, r.as_json())
                      for r in results]}


def format_table(results: list[NodeResult], wall: float, action: str) -> str:
    width = max([len(r.node) for r in results] + [4])
    lines = [f"{'node':<{width}}  {'status':<8}  {'power':<5}  {'sent':<6}  seconds  detail"]
    for r in results:
        detail = "; ".join(r.problems)
        lines.append(f"{r.node:<{width}}  {r.status.value:<8}  {r.power or '-':<5}  "
                     f"{r.action or '-':<6}  {r.seconds:>7.1f}  {detail}".rstrip())
    c = counts(results)
    lines.append("")
    lines.append(f"power {action}: {len(results)} node(s): "
                 + ", ".join(f"{v} {k}" for k, v in c.items() if v) + f"; {wall:.1f}s wall")
    return "\n".join(lines)
