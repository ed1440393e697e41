"""``fleet pxe set NODE install|local`` and ``fleet pxe status``: argparse glue."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fleet.cliparts import Loader
from fleet.exitcodes import Exit
from fleet.inventory.model import Inventory
from fleet.pxe import state


def add_parser(sub: Any, common: argparse.ArgumentParser, load: Loader) -> None:
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--state-dir", type=Path, metavar="DIR",
                       help="the boot-mode links (default: the inventory's site.pxe_state)")
    where.add_argument("--pxe-root", type=Path, metavar="DIR",
                       help="the deployed pxe/ tree (default: site.pxe_root)")
    p = sub.add_parser("pxe", help="show or switch nodes' PXE boot mode (install | local)",
                       description="Run-time boot mode per node, switched atomically on the "
                                   "provisioning host: no render, no dnsmasq reload. A node "
                                   "without a mode boots from its local disk.")
    psub = p.add_subparsers(dest="pxe_verb", required=True, metavar="ACTION")
    sp = psub.add_parser("set", parents=[common, where], help="arm an install or boot locally",
                         description="Point NODE's iPXE and GRUB links at its rendered "
                                     "install or local script.")
    sp.add_argument("node", metavar="NODE", help="hostname or provisioning MAC")
    sp.add_argument("mode", choices=state.MODES)
    sp.add_argument("--token-stdin", action="store_true",
                    help="with install: read the node's one-time install token from stdin "
                         "and publish it for the installer (what `fleet reinstall` does "
                         "when the provisioning host is not the master)")
    sp.set_defaults(func=lambda a, pr: cmd_set(a, load(a, pr)))
    sp = psub.add_parser("status", parents=[common, where], help="list every node's mode",
                         description="List each node's boot mode and where its links point.")
    sp.add_argument("nodes", nargs="*", metavar="NODE", help="only these (default: all)")
    sp.set_defaults(func=lambda a, pr: cmd_status(a, load(a, pr)))


def _state_dir(args: argparse.Namespace, inv: Inventory) -> Path:
    return args.state_dir if args.state_dir is not None else state.state_dir(inv)


def cmd_set(args: argparse.Namespace, inv: Inventory) -> int:
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
        print(json.dumps({"ok": True, "node": t.hostname, "mac": t.mac, "before": before,
                          "mode": args.mode}, indent=2))
    elif not args.quiet:
        print(f"{t.hostname} ({t.mac}): {before} -> {args.mode}")
    return Exit.OK


def cmd_status(args: argparse.Namespace, inv: Inventory) -> int:
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
        print(json.dumps({"ok": True, "state_dir": str(sd), "nodes": [
            {"node": e.hostname, "mac": e.mac, "mode": e.mode, "ipxe": e.ipxe,
             "grub": e.grub, "consistent": e.consistent} for e in entries],
            "stray": stray}, indent=2))
        return Exit.OK
    if not args.quiet:
        width = max((len(e.hostname) for e in entries), default=4)
        for e in entries:
            note = "" if e.consistent else "  (iPXE and GRUB links disagree: set it again)"
            print(f"{e.hostname:<{width}}  {e.mac}  {e.mode}{note}")
        for name in stray:
            print(f"stray: {sd / name} (no node has this MAC any more; remove it)")
    return Exit.OK
