"""``fleet discover [list]`` and ``fleet discover accept NODE...|--all``: the commissioning
reports kept by the endpoint (fleet.discover), matched to planned nodes, and their facts
written into inventory.yaml."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fleet.cliparts import Parents, add_action, add_actions, add_store_dir
from fleet.context import Context
from fleet.exitcodes import Exit

EPILOG = """exit codes: 0 done, 1 invalid inventory (or the edit would make it invalid:
nothing written), 2 usage, 4 the reports or the inventory could not be read or written,
5 a node was refused (conflict, no match) or a report is unmatched"""


def register(sub: Any, parents: Parents) -> None:
    from fleet.master import statedir

    _p, actions = add_actions(
        sub, "discover", "Machines that booted the commissioning environment and "
        "reported (fleet endpoint --discover): each matched to a planned node by its boot "
        "NIC's switch port (LLDP), else its serial or BMC MAC; accept writes the facts into "
        "inventory.yaml (comments and layout kept) and moves the node to burn-in.", EPILOG)
    for name, text in (("list", "every report and the node it matches"),
                       ("accept", "write matched reports' facts into inventory.yaml")):
        sp = add_action(actions, parents, name, text, EPILOG)
        add_store_dir(sp, "--reports", statedir.DISCOVER, "the kept reports")
        if name == "accept":
            sp.add_argument("nodes", nargs="*", metavar="NODE", help="the nodes to accept")
            sp.add_argument("--all", action="store_true", help="every matched node")
            sp.add_argument("--dry-run", action="store_true",
                            help="show the outcome, write nothing")


def _load(args: argparse.Namespace) -> tuple[str, Any, Any, list[Any], dict[str, str]]:
    from fleet.discover import match, plan, store
    from fleet.inventory.load import read_text

    path = Path(args.inventory)
    text = read_text(path)
    inv, planned = plan.load(text, str(path))
    got = store.load_all(args.reports)
    reports = {mac: r.report for mac, r in got.items() if isinstance(r, store.Received)}
    unreadable = {mac: r for mac, r in got.items() if isinstance(r, str)}
    found = match.match_all(reports, planned, list(inv.raw.switches))
    return text, inv, planned, found, unreadable


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    if args.discover_verb == "accept" and bool(args.nodes) == bool(args.all):
        print("fleet discover accept: name NODEs or give --all (not both)", file=sys.stderr)
        return Exit.USAGE
    try:  # an invalid or unreadable inventory: fleet.cli's one answer (1 or 4)
        text, inv, planned, found, unreadable = _load(args)
    except OSError as exc:
        print(f"fleet discover: {exc}", file=sys.stderr)
        ctx.out.error(str(exc))
        return Exit.IO
    if args.discover_verb == "list":
        return _list(ctx, found, unreadable)
    return _accept(args, ctx, text, inv, planned, found)


def _row(m: Any) -> dict[str, Any]:
    r = m.report
    return {"mac": m.mac, "serial": r.dmi.serial, "product": r.dmi.product,
            "bmc_mac": r.bmc_mac, "gpus": r.gpus(), "node": m.node, "by": m.by,
            "port": f"{m.port[0]}:{m.port[1]}" if m.port else None,
            "problems": m.problems}


def _list(ctx: Context, found: list[Any], unreadable: dict[str, str]) -> Exit:
    from fleet.master.text import shown

    rows = [_row(m) for m in found]
    if ctx.out.json:
        ctx.out.emit({"reports": rows, "unreadable": unreadable})
    else:
        print(f"{'MAC':17}  {'SERIAL':16}  {'PORT':10}  {'NODE':10}  BY       PRODUCT")
        for row in rows:
            print(f"{row['mac']:17}  {shown(row['serial'], 16):16}  {row['port'] or '-':10}  "
                  f"{row['node'] or 'UNMATCHED':10}  {row['by'] or '-':7}  "
                  f"{shown(row['product'], 40)}")
            for p in row["problems"]:
                print(f"    {shown(p)}")
        for mac, why in unreadable.items():
            print(f"{mac}: unreadable report: {shown(why)}")
    bad = unreadable or any(r["node"] is None for r in rows)
    return Exit.FAILED if bad else Exit.OK


def _accept(args: argparse.Namespace, ctx: Context, text: str, inv: Any, planned: Any,
            found: list[Any]) -> Exit:
    from fleet.discover import accept
    from fleet.master.text import shown
    from fleet.problems import InventoryError, format_text

    unknown = [n for n in args.nodes if n not in planned]
    if unknown:
        print(f"fleet discover accept: no node {', '.join(unknown)} in the inventory",
              file=sys.stderr)
        return Exit.USAGE
    new, outcomes = accept.accept(text, inv, planned, found, args.nodes or None)
    try:
        if new != text:
            accept.validate(new, args.inventory)
    except InventoryError as exc:
        print(format_text(exc.problems, wrote_nothing=True), file=sys.stderr)
        ctx.out.error("the edit would make the inventory invalid; nothing was written",
                      problems=[str(p) for p in exc.problems])
        return Exit.INVALID
    if new != text and not args.dry_run:
        from fleet.discover.edit import write_atomic

        write_atomic(Path(args.inventory), new)
    rows = [{"node": o.node, "mac": o.mac, "verdict": o.verdict, "reasons": o.reasons,
             "facts": o.facts} for o in outcomes]
    if ctx.out.json:
        ctx.out.emit({"outcomes": rows, "written": new != text and not args.dry_run})
    else:
        for o in outcomes:
            print(f"{o.node}: {o.verdict}" + (f" ({o.mac})" if o.mac else "")
                  + "".join(f"\n    {shown(r)}" for r in o.reasons))
    return Exit.FAILED if any(o.verdict == "refused" for o in outcomes) else Exit.OK

