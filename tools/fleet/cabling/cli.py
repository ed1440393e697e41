"""``fleet cabling [TARGET]``: each node's LLDP neighbours (one Salt call, bounded) against
the inventory's switch and port per NIC; a table (problems first) and --json.

In the one shape every verb moves to: :func:`register` builds the parser, :func:`run`
runs it with a context that loads the inventory and says progress; :func:`add_parser` is
today's registration in fleet.cli."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fleet.cliparts import Loader, add_command, add_salt_config, target_nodes
from fleet.exitcodes import Exit
from fleet.inventory.model import Inventory

HELP = "check each NIC's switch and port against what its node hears by LLDP"
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


@dataclass(frozen=True)
class Context:
    """What a verb needs from fleet.cli: the inventory (loaded once asked) and progress."""

    load: Callable[[], Inventory]
    progress: Callable[[str], None]


def register(sub: Any, parents: Sequence[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = add_command(sub, parents[0], "cabling", HELP, DESCRIPTION, EPILOG,
                    target="'tbox-0*'")
    p.add_argument("--salt-timeout", type=float, default=15.0, metavar="S",
                   help="seconds the salt call waits for the minions (default 15)")
    add_salt_config(p)
    return p


def add_parser(sub: Any, common: argparse.ArgumentParser, load: Loader) -> None:
    p = register(sub, [common])
    p.set_defaults(func=lambda a, pr: run(a, Context(lambda: load(a, pr), pr)))


def ask(args: argparse.Namespace, nodes: Sequence[str]) -> dict[str, Any]:
    """The nodes' raw answers: the one place that talks to Salt."""
    from fleet.cabling.gather import LLDPCLI, salt_run_all
    from fleet.reinstall.cli import runner_for
    from fleet.status.sources import gather_job_timeout

    args.slurm_command = None  # runner_for's Slurm prefix: no Slurm tool is run here
    return salt_run_all(runner_for(args), nodes, LLDPCLI, args.salt_timeout,
                        gather_job_timeout(args.salt_config))


def run(args: argparse.Namespace, ctx: Context) -> int:
    from fleet.cabling import gather, report
    from fleet.cabling.compare import compare, expected_links
    from fleet.cabling.nics import boot_nic_name
    from fleet.inventory.lifecycle import default_target

    inv = ctx.load()
    explicit = args.target is not None
    names = target_nodes(args, inv)
    if names is None:
        return Exit.USAGE
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
        answers = ask(args, names) if names else {}
    except gather.MasterDownError as exc:
        print(f"fleet: the Salt master could not be asked: {exc}", file=sys.stderr)
        return Exit.IO
    seen = gather.observe(answers, names)
    chosen = set(names)
    expected = {k: w for k, w in expected_links(inv, boot).items()
                if k[0] in chosen}
    findings = compare(expected, seen.neighbours, switches=list(inv.raw.switches))
    wall = time.monotonic() - t0
    doc = report.document(args.target, findings, names, seen.errors, wall, left)
    if args.json:
        print(json.dumps(doc, indent=2))
    elif not args.quiet:
        print(report.table(findings, seen.errors, wall))
    return Exit.OK if doc["ok"] else Exit.FAILED
