"""``fleet ports [SWITCH...] [--free]``: every switch port, which node and NIC, or free."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fleet.cliparts import Parents, add_command
from fleet.context import Context
from fleet.exitcodes import Exit


def register(sub: Any, parents: Parents) -> None:
    p = add_command(sub, parents, "ports",
                    "Every port of every switch and IB switch (or of SWITCH), used by which "
                    "node and NIC, or free, from the inventory's cabling (first_port + "
                    "position in the group, or a node's own port).",
                    "exit codes: 0 ok, 1 invalid inventory, 2 usage (no such switch)")
    p.add_argument("switches", nargs="*", metavar="SWITCH",
                   help="only these switches (default: all)")
    p.add_argument("--free", action="store_true",
                   help="one line per switch: its free ports as ranges")


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.ops import ports

    inv = ctx.inventory()
    unknown = [s for s in args.switches if s not in inv.raw.switches]
    if unknown:
        print(f"fleet: ports: no switch {', '.join(unknown)} in {inv.file}; the switches: "
              f"{', '.join(inv.raw.switches)}", file=sys.stderr)
        return Exit.USAGE
    found = ports.switch_ports(inv, args.switches or None)
    if args.json:
        ctx.out.emit({"switches": [s.as_json() for s in found]})
    elif not args.quiet:
        print(ports.table(found, free_only=args.free))
    return Exit.OK
