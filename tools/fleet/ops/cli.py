"""``fleet node list|show`` and ``fleet ports`` (argparse glue, tables, --json), and the
registration of this package's verbs (power, console too) in the order --help lists them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fleet.cliparts import Loader, add_command, target_nodes
from fleet.exitcodes import Exit
from fleet.inventory.model import Inventory

NODE_EPILOG = """
exit codes: 0 ok (also when --where leaves no node: the list is empty), 1 invalid inventory,
2 usage (a target item that names no node, an unknown --where field)
"""


def add_parsers(sub: Any, common: argparse.ArgumentParser, load: Loader) -> None:
    from fleet.ops.console import add_parser as add_console
    from fleet.ops.power_cli import add_parser as add_power

    add_power(sub, common, load)
    add_console(sub, common, load)
    _add_node(sub, common, load)
    _add_ports(sub, common, load)


def _add_node(sub: Any, common: argparse.ArgumentParser, load: Loader) -> None:
    from fleet.ops.nodes import FIELDS

    p = sub.add_parser("node", help="what the inventory says of nodes: list or show",
                       description="Nodes as the inventory resolves them (no node is asked).")
    nsub = p.add_subparsers(dest="node_verb", required=True, metavar="ACTION")
    for name, short, what in (
            ("list", "one line per node", "One line per node: group, profile, partition, "
             "provisioning and BMC addresses, switch port, IB switch port."),
            ("show", "everything about each node", "Each node's group, profile, roles, "
             "partition, lifecycle state, every NIC (address, MAC, switch port), BMC, "
             "disks.")):
        sp = add_command(nsub, common, name, short, what, NODE_EPILOG, target="'tbox-0*'")
        sp.add_argument("--where", action="append", default=[], metavar="FIELD=VALUE",
                        help=f"only nodes whose FIELD matches VALUE (a glob; '-' for none); "
                             f"repeat for all of several; FIELD: {', '.join(FIELDS)}")
        sp.set_defaults(func=lambda a, pr: cmd_node(a, load(a, pr)))


def cmd_node(args: argparse.Namespace, inv: Inventory) -> int:
    from fleet.ops import nodes

    every = args.target is None
    names = target_nodes(args, inv)
    if names is None:
        return Exit.USAGE
    if every:  # the whole inventory: the retired nodes, rendered nowhere, too
        names += list(inv.retired)
    try:
        where = nodes.parse_where(args.where)
    except nodes.WhereError as exc:
        print(f"fleet: {exc}", file=sys.stderr)
        return Exit.USAGE
    records = [r for r in (nodes.record(inv.nodes.get(n) or inv.retired[n]) for n in names)
               if nodes.matches(r, where)]
    if args.json:
        print(json.dumps({"ok": True, "target": args.target, "where": args.where,
                          "nodes": records}, indent=2))
    elif not args.quiet:
        if args.node_verb == "list":
            print(nodes.list_table(records))
        else:
            print("\n\n".join(nodes.show_text(r) for r in records))
    return Exit.OK


def _add_ports(sub: Any, common: argparse.ArgumentParser, load: Loader) -> None:
    p = add_command(sub, common, "ports", "every switch port: which node and NIC, or free",
                    "Every port of every switch and IB switch (or of SWITCH), used by which "
                    "node and NIC, or free, from the inventory's cabling (first_port + "
                    "position in the group, or a node's own port).",
                    "exit codes: 0 ok, 1 invalid inventory, 2 usage (no such switch)")
    p.add_argument("switches", nargs="*", metavar="SWITCH",
                   help="only these switches (default: all)")
    p.add_argument("--free", action="store_true",
                   help="one line per switch: its free ports as ranges")
    p.set_defaults(func=lambda a, pr: cmd_ports(a, load(a, pr)))


def cmd_ports(args: argparse.Namespace, inv: Inventory) -> int:
    from fleet.ops import ports

    unknown = [s for s in args.switches if s not in inv.raw.switches]
    if unknown:
        print(f"fleet: ports: no switch {', '.join(unknown)} in {inv.file}; the switches: "
              f"{', '.join(inv.raw.switches)}", file=sys.stderr)
        return Exit.USAGE
    found = ports.switch_ports(inv, args.switches or None)
    if args.json:
        print(json.dumps({"ok": True, "switches": [s.as_json() for s in found]}, indent=2))
    elif not args.quiet:
        print(ports.table(found, free_only=args.free))
    return Exit.OK
