"""``fleet pxe set NODE install|local`` and ``fleet pxe status``: argparse glue."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleet.cliparts import Parents, add_actions, add_pxe_state
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.output import node_entry
from fleet.pxe import state

if TYPE_CHECKING:
    from fleet.inventory.model import Inventory


def register(sub: Any, parents: Parents) -> None:
    where = argparse.ArgumentParser(add_help=False)
    add_pxe_state(where, "sets or reads")
    _p, psub = add_actions(sub, "pxe", "Run-time boot mode per node, switched atomically on "
                                       "the provisioning host: no render, no dnsmasq reload. "
                                       "A node without a mode boots from its local disk.",
                           "exit codes: 0 ok, 1 invalid inventory, 2 usage (no such node), "
                           "4 the boot-mode links could not be read or written")
    sp = psub.add_parser("set", parents=[*parents, where], help="arm an install or boot locally",
                         description="Point NODE's iPXE and GRUB links at its rendered "
                                     "install or local script.")
    sp.add_argument("node", metavar="NODE", help="hostname or provisioning MAC")
    sp.add_argument("mode", choices=state.MODES)
    sp.add_argument("--token-stdin", action="store_true",
                    help="with install: read the node's one-time install token from stdin "
                         "and publish it for the installer (what `fleet reinstall` does "
                         "when the provisioning host is not the master)")
    sp = psub.add_parser("status", parents=[*parents, where], help="list every node's mode",
                         description="List each node's boot mode and where its links point.")
    sp.add_argument("nodes", nargs="*", metavar="NODE", help="only these (default: all)")


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    inv = ctx.inventory()
    return cmd_set(args, ctx, inv) if args.pxe_verb == "set" else cmd_status(args, ctx, inv)


def _state_dir(args: argparse.Namespace, inv: Inventory) -> Path:
    return args.pxe_state if args.pxe_state is not None else state.state_dir(inv)


def cmd_set(args: argparse.Namespace, ctx: Context, inv: Inventory) -> Exit:
    try:
        t = state.target(inv, args.node, args.pxe_root)
    except state.StateError as exc:
        print(f"fleet: {exc}", file=sys.stderr)
        return Exit.USAGE
    token = None
    if args.token_stdin:
        token = sys.stdin.readline().strip()
        if args.mode != "install" or not token:
            print("fleet: --token-stdin needs mode install and a token on stdin",
                  file=sys.stderr)
            return Exit.USAGE
    sd = _state_dir(args, inv)
    try:
        before = state.get_mode(sd, t)
        state.set_mode(sd, t, args.mode, token)
    except state.StateError as exc:
        print(f"fleet: {exc}", file=sys.stderr)
        return Exit.IO
    if args.json:
        ctx.out.emit({"node": t.hostname, "mac": t.mac, "before": before, "mode": args.mode})
    elif not args.quiet:
        print(f"{t.hostname} ({t.mac}): {before} -> {args.mode}")
    return Exit.OK


def cmd_status(args: argparse.Namespace, ctx: Context, inv: Inventory) -> Exit:
    try:
        ts = ([state.target(inv, n, args.pxe_root) for n in args.nodes] if args.nodes
              else state.targets(inv, args.pxe_root))
    except state.StateError as exc:
        print(f"fleet: {exc}", file=sys.stderr)
        return Exit.USAGE
    sd = _state_dir(args, inv)
    try:
        entries = state.status(sd, ts)
        stray = [] if args.nodes else state.strays(sd, ts)
    except state.StateError as exc:
        print(f"fleet: {exc}", file=sys.stderr)
        return Exit.IO
    if args.json:
        ctx.out.emit({"state_dir": str(sd), "nodes": [
            node_entry(e.hostname, e.mode, None,
                       [] if e.consistent else ["iPXE and GRUB links disagree: set it again"],
                       {"mac": e.mac, "mode": e.mode, "ipxe": e.ipxe, "grub": e.grub,
                        "consistent": e.consistent}) for e in entries],
            "stray": stray})
        return Exit.OK
    if not args.quiet:
        width = max((len(e.hostname) for e in entries), default=4)
        for e in entries:
            note = "" if e.consistent else "  (iPXE and GRUB links disagree: set it again)"
            print(f"{e.hostname:<{width}}  {e.mac}  {e.mode}{note}")
        for name in stray:
            print(f"stray: {sd / name} (no node has this MAC any more; remove it)")
    return Exit.OK
