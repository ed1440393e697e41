"""``fleet power on|off|cycle|reset|status TARGET``: argparse glue, the table and --json."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from fleet.bmc.limits import REQUEST_TIMEOUT
from fleet.cliparts import (
    Parents,
    add_bmc_options,
    add_bmc_pool,
    add_command,
    add_force,
    add_ignore_boot_mode,
    add_pxe_options,
    add_salt_config,
    add_slurm_command,
    add_timeouts,
    bmc_options,
    boot_mode_store,
)
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.ops.power import ACTIONS, DISRUPTIVE, Action, NodeResult, Status
from fleet.output import node_entry
from fleet.signals import long_verb

if TYPE_CHECKING:
    from fleet.inventory.model import Inventory

DESCRIPTION = """
Send one power action to the BMC of every node TARGET names (Redfish or IPMI, as the
profile says; the password from the secrets store, never on a command line or in a log),
at most --parallel at once, each node within --deadline seconds: a BMC that does not answer
costs its node the deadline and holds no other. One result per node: done, already (in that
state; nothing sent), refused, failed (and why). off, cycle and reset first drain a Slurm
compute node through the one drain (as reinstall and rollout: preemptible jobs requeued,
running ones waited for up to --drain-timeout, or with --force cancelled by id) and leave
it drained, reason "fleet power ACTION"; they are refused on the provisioning host, the
Salt master and the head roles, and on a node whose PXE boot mode is install or cannot be
read (unless --ignore-boot-mode). status and on never drain nor are refused. See
docs/operations.md.
"""
EPILOG = """
exit codes: 0 every node done or already in that state, 1 invalid inventory, 2 usage (a
target item that names no node), 5 a node was refused or failed (or its drain did not get
there), 130 / 143 stopped by SIGINT / SIGTERM (the nodes drained for it stay drained)
"""

# what a SIGINT/SIGTERM leaves (fleet.signals.long_verb)
STOPPED = ('an action already sent to a BMC may still take effect, and a node drained for it'
           ' stays drained (`fleet power status`, `sinfo -n NODE`)')


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
    add_ignore_boot_mode(p, "off, cycle, reset: ")
    add_timeouts(p, drain=3600.0)
    add_bmc_pool(p, parallel=16, deadline=60.0, bmc_timeout=REQUEST_TIMEOUT)
    add_pxe_options(p, "reads (off, cycle, reset)")
    add_slurm_command(p)
    add_bmc_options(p)
    add_salt_config(p)  # the runner of scontrol/squeue (with --slurm-command) is built from it


@long_verb(STOPPED)
def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.bmc.base import BmcClient
    from fleet.bmc.connect import client_for
    from fleet.ops import power

    progress = ctx.progress
    inv, names = ctx.targets()
    if args.parallel < 1 or args.deadline <= 0 or args.bmc_timeout <= 0 \
            or args.drain_timeout <= 0:
        print("fleet: --parallel must be at least 1, --deadline, --bmc-timeout and "
              "--drain-timeout above 0", file=sys.stderr)
        return Exit.USAGE
    action: Action = args.action

    def client(name: str) -> BmcClient:
        return client_for(inv.nodes[name], bmc_options(args, name, timeout=args.bmc_timeout))

    t0 = time.monotonic()
    stopped, drained = _before(args, ctx, inv, names) if action in DISRUPTIVE else ({}, {})
    go = [n for n in names if n not in stopped]
    progress(f"power {action}: {len(go)} node(s), {args.parallel} at once")
    done = power.run(go, action, client, lambda _name: [], parallel=args.parallel,
                     deadline=args.deadline, progress=progress)
    by = {r.node: r for r in done} | stopped
    results = [by[n] for n in names]
    wall = time.monotonic() - t0
    bad = [r for r in results if r.status.bad]
    if args.json:
        ctx.out.emit(as_json(args.target, action, args.force, wall, results, drained))
    elif not args.quiet:
        print(format_table(results, wall, action, drained))
    else:
        for r in bad:
            print(f"{r.node}: {r.status.value}: {'; '.join(r.problems)}", file=sys.stderr)
    return Exit.FAILED if bad else Exit.OK


def _before(args: argparse.Namespace, ctx: Context, inv: Inventory, names: list[str]
            ) -> tuple[dict[str, NodeResult], dict[str, str]]:
    """off, cycle, reset: the nodes refused (head, boot mode) or whose drain did not get
    there, as their results; and what the drain did to each drained node."""
    from fleet.ops import powerdrain, refusals

    modes = boot_mode_store(args, inv)
    stopped: dict[str, NodeResult] = {}
    for name in names:
        reasons = refusals.refusals(inv, inv.nodes[name], modes,
                                    ignore_boot_mode=args.ignore_boot_mode)
        if reasons:
            stopped[name] = NodeResult(name, Status.REFUSED, problems=reasons)
    t0 = time.monotonic()
    drained, failed = powerdrain.drain_first(
        ctx.runner(), inv, [n for n in names if n not in stopped], args.action,
        force=args.force, timeout=args.drain_timeout, parallel=args.parallel,
        say=lambda msg: print(f"fleet power: {msg}", file=sys.stderr, flush=True))
    for name, why in failed.items():
        stopped[name] = NodeResult(name, Status.FAILED, seconds=time.monotonic() - t0,
                                   problems=[why])
    return stopped, drained


def counts(results: list[NodeResult]) -> dict[str, int]:
    return {s.value: sum(1 for r in results if r.status is s) for s in Status}


def as_json(target: str, action: str, force: bool, wall: float,
            results: list[NodeResult], drained: dict[str, str]) -> dict[str, Any]:
    return {"ok": not any(r.status.bad for r in results), "target": target, "action": action,
            "force": force, "wall_s": round(wall, 2), "counts": counts(results),
            "drained": drained,
            "nodes": [node_entry(r.node, r.status.value, r.seconds, r.problems, r.as_json())
                      for r in results]}


def format_table(results: list[NodeResult], wall: float, action: str,
                 drained: dict[str, str]) -> str:
    width = max([len(r.node) for r in results] + [4])
    lines = [f"{'node':<{width}}  {'status':<8}  {'power':<5}  {'sent':<6}  seconds  detail"]
    for r in results:
        detail = "; ".join(r.problems)
        lines.append(f"{r.node:<{width}}  {r.status.value:<8}  {r.power or '-':<5}  "
                     f"{r.action or '-':<6}  {r.seconds:>7.1f}  {detail}".rstrip())
    from fleet.ops.powerdrain import reason

    c = counts(results)
    lines.append("")
    lines += [f"{n}: {what}; left drained (reason: {reason(action)})"
              for n, what in drained.items()]
    lines.append(f"power {action}: {len(results)} node(s): "
                 + ", ".join(f"{v} {k}" for k, v in c.items() if v) + f"; {wall:.1f}s wall")
    return "\n".join(lines)
