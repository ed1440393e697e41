"""``fleet node list|show [TARGET] [--where FIELD=VALUE]``: what the inventory says of
nodes (argparse glue, tables, --json)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fleet.cliparts import (
    Parents,
    add_actions,
    add_bmc_options,
    add_salt_config,
    add_salt_timeout,
    add_target,
    bmc_options,
)
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.output import node_entry

NODE_EPILOG = """
exit codes: 0 ok (also when --where leaves no node: the list is empty), 1 invalid inventory,
2 usage (a target item that names no node, an unknown --where field)
"""


def register(sub: Any, parents: Parents) -> None:
    from fleet.ops.nodes import FIELDS

    _p, nsub = add_actions(sub, "node",
                           "Nodes as the inventory resolves them (no node is asked).")
    for name, short, what in (
            ("list", "one line per node", "One line per node: group, profile, partition, "
             "provisioning and BMC addresses, switch port, IB switch port."),
            ("show", "everything about each node", "Each node's group, profile, roles, "
             "partition, lifecycle state, every NIC (address, MAC, switch port), BMC, "
             "disks, and the burn-in results kept here (--burnin-results).")):
        sp = nsub.add_parser(name, parents=list(parents), help=short, description=what,
                             epilog=NODE_EPILOG)
        add_target(sp, "'tbox-0*'")
        sp.add_argument("--where", action="append", default=[], metavar="FIELD=VALUE",
                        help=f"only nodes whose FIELD matches VALUE (a glob; '-' for none); "
                             f"repeat for all of several; FIELD: {', '.join(FIELDS)}")
        if name == "show":
            _add_burnin(sp)


def _add_burnin(sp: Any) -> None:
    from pathlib import Path

    from fleet.master import statedir

    sp.add_argument("--burnin-results", type=Path, default=statedir.BURNIN.path(),
                    metavar="DIR", help=f"the burn-in results (${statedir.BURNIN.env}, "
                                        f"default {statedir.BURNIN.default})")
    sp.add_argument("--hardware", action="store_true",
                    help="ask the minions' hardware grains (one salt call) and show every "
                         "fact that differs from the inventory, with both values")
    sp.add_argument("--bmc", action="store_true",
                    help="read each node's hardware facts from its Redfish BMC and show "
                         "each beside the inventory's value (serial, MACs, BMC MAC, memory "
                         "and DIMMs, CPUs, GPUs, drive serials, firmware versions)")
    add_salt_config(sp)
    add_salt_timeout(sp, 10.0, "--hardware")
    add_bmc_options(sp)


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.ops import nodes

    every = args.target is None
    inv, names = ctx.targets()
    if every:  # the whole inventory: the retired nodes, rendered nowhere, too
        names += list(inv.retired)
    try:
        where = nodes.parse_where(args.where)
    except nodes.WhereError as exc:
        print(f"fleet: {exc}", file=sys.stderr)
        return Exit.USAGE
    records = [r for r in (nodes.record(inv.nodes.get(n) or inv.retired[n]) for n in names)
               if nodes.matches(r, where)]
    if args.node_verb == "show":
        _with_burnin(inv, records, args.burnin_results)
        if args.hardware and not _with_hardware(ctx, inv, records, args.salt_timeout):
            return Exit.IO
        if args.bmc:
            _with_bmc(args, inv, records)
    if args.json:
        ctx.out.emit({"target": args.target, "where": args.where,
                      "nodes": [node_entry(r["node"], r["state"], None, [], r)
                                for r in records]})
    elif not args.quiet:
        if args.node_verb == "list":
            print(nodes.list_table(records))
        else:
            print("\n\n".join(_show(r) for r in records))
    return Exit.OK


def _with_burnin(inv: Any, records: list[dict[str, Any]], root: Any) -> None:
    """Each record of a node in the inventory gets its burn-in (fleet.burnin.shown)."""
    from fleet.burnin import shown

    live = [r["node"] for r in records if r["node"] in inv.nodes]
    got = shown.records(inv, live, root)
    for r in records:
        r["burnin"] = got.get(r["node"])


def _show(r: dict[str, Any]) -> str:
    from fleet.burnin import shown
    from fleet.ops import nodes

    lines = [nodes.show_text(r)]
    if r.get("burnin") is not None:
        lines += shown.lines(r["burnin"])
    if "hardware" in r:
        drifts = r["hardware"]
        lines += (["  hardware   no answer from its minion"] if drifts is None else
                  ["  hardware   as the inventory says"] if not drifts else
                  [f"  hardware   {d['fact']}: inventory {d['inventory']}, found {d['found']}"
                   for d in drifts])
    if "bmc_facts" in r:  # "bmc" is the record's BMC interface
        lines += _bmc_lines(r["bmc_facts"])
    return "\n".join(lines)


def _bmc_lines(b: dict[str, Any]) -> list[str]:
    """The BMC's facts beside the inventory's, a drift marked ``!``; all of it escaped
    already (fleet.bmc.facts)."""
    if b.get("error"):
        return [f"  bmc facts  not read: {b['error']}"]
    out = [f"  bmc facts  {'fact':<17}{'inventory':<28}bmc"]
    for row in b["facts"]:
        mark = "!" if row["drift"] else " "
        inv = "-" if row["inventory"] is None else row["inventory"]
        seen = "(not told)" if row["bmc"] is None else row["bmc"]
        out.append(f"           {mark}{row['fact']:<17}{inv:<28}{seen}")
    for name, version in b["firmware"].items():
        out.append(f"  firmware   {name}: {version}")
    return out


def _with_bmc(args: argparse.Namespace, inv: Any, records: list[dict[str, Any]]) -> None:
    """Each record of an installed node gets its BMC's facts beside the inventory's
    (fleet.bmc.facts), read one node at a time; a BMC not read says why."""
    from fleet.bmc.base import BmcError
    from fleet.bmc.connect import client_for
    from fleet.bmc.facts import read, rows
    from fleet.bmc.redfish import RedfishClient

    for r in records:
        node = inv.nodes.get(r["node"])
        if node is None or node.state == "planned":
            continue
        try:
            client = client_for(node, bmc_options(args, node.hostname))
            if not isinstance(client, RedfishClient):
                r["bmc_facts"] = {"error": "an IPMI BMC tells no hardware facts (Redfish only)"}
                continue
            seen = read(client)
        except BmcError as exc:
            r["bmc_facts"] = {"error": str(exc)}
            continue
        r["bmc_facts"] = {"error": None, "facts": rows(node, seen),
                    "firmware": seen.as_json()["firmware"], "unread": list(seen.unread)}


def _with_hardware(ctx: Context, inv: Any, records: list[dict[str, Any]],
                   timeout: float) -> bool:
    """Each record of a node in service gets its drifts (fleet.status.hardware); False when
    the master did not answer (said on stderr)."""
    from fleet.master.salt import MasterError
    from fleet.status import hardware

    live = [r["node"] for r in records
            if r["node"] in inv.nodes and inv.nodes[r["node"]].state != "planned"]
    try:
        got = hardware.drift(ctx.runner(), inv, live, timeout) if live else {}
    except MasterError as exc:
        print(f"fleet node show: --hardware: {exc}", file=sys.stderr)
        ctx.out.error(str(exc))
        return False
    for r in records:
        if r["node"] in live:
            d = got.get(r["node"])
            r["hardware"] = None if d is None else [x.as_json() for x in d]
    return True
