"""``fleet cabling [TARGET]``: each node's LLDP neighbours (one Salt call, bounded) against
the inventory's switch and port per NIC; a table (problems first) and --json."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from fleet.cliparts import Parents, add_command, add_salt_config, add_salt_timeout
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.signals import long_verb

DESCRIPTION = """
Ask every node TARGET names for its LLDP neighbours (`lldpcli -f json show neighbors`,
one Salt call for all of them, --salt-timeout) and compare each Ethernet NIC's switch and
port with the inventory's: ok, WRONG PORT (the right switch, another port), WRONG SWITCH,
MISSING (nothing heard on it), UNEXPECTED (a neighbour where the inventory cables
nothing, or a second one), UNREADABLE PORT, NOT OBSERVED (the node did not report: its
minion or lldpd is down). Problems first. The nodes run lldpd through the lldp role.
See docs/operations.md.
"""
EPILOG = """
exit codes: 0 every NIC where the inventory says, 1 invalid inventory, 2 usage (a target
item that names no node), 4 the Salt master could not be asked, 5 a NIC is not where the
inventory says, or a node did not report
"""

# what a SIGINT/SIGTERM leaves (fleet.signals.long_verb)
STOPPED = "nothing was changed; the LLDP queries in flight end on their Salt timeout"


def register(sub: Any, parents: Parents) -> None:
    p = add_command(sub, parents, "cabling", DESCRIPTION, EPILOG, target="'tbox-0*'")
    add_salt_timeout(p, 15.0, "the salt call")
    add_salt_config(p)


def ask(args: argparse.Namespace, ctx: Context, nodes: Sequence[str]) -> dict[str, Any]:
    """The nodes' raw answers: the one place that talks to Salt."""
    from fleet.cabling.gather import LLDPCLI, salt_run_all
    from fleet.master.salt import gather_job_timeout

    return salt_run_all(ctx.runner(), nodes, LLDPCLI, args.salt_timeout,
                        gather_job_timeout(args.salt_config))


@long_verb(STOPPED)
def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.cabling import gather, report
    from fleet.cabling.compare import compare, expected_links
    from fleet.cabling.nics import boot_nic_name
    from fleet.inventory.lifecycle import default_target
    from fleet.master.salt import MasterError

    explicit = args.target is not None
    inv, names = ctx.targets()
    if args.salt_timeout <= 0:
        print("fleet: --salt-timeout must be above 0", file=sys.stderr)
        return Exit.USAGE
    left = {} if explicit else default_target(inv, "cabling")[1]
    try:
        boot = boot_nic_name()
    except RuntimeError as exc:  # fleet installed away from its checkout's salt/
        print(f"fleet: {exc}", file=sys.stderr)
        return Exit.IO
    t0 = time.monotonic()
    ctx.progress(f"asking {len(names)} node(s) for their LLDP neighbours")
    try:
        answers = ask(args, ctx, names) if names else {}
    except MasterError as exc:
        why = f"the Salt master could not be asked: {exc}"
        ctx.out.error(why)
        print(f"fleet: {why}", file=sys.stderr)
        return Exit.IO
    seen = gather.observe(answers, names)
    chosen = set(names)
    expected = {k: w for k, w in expected_links(inv, boot).items()
                if k[0] in chosen}
    findings = compare(expected, seen.neighbours, switches=list(inv.raw.switches))
    wall = time.monotonic() - t0
    doc = report.document(args.target, findings, names, seen.errors, wall, left)
    if args.json:
        ctx.out.emit(doc)
    elif not args.quiet:
        print(report.table(findings, seen.errors, wall))
    return Exit.OK if doc["ok"] else Exit.FAILED
