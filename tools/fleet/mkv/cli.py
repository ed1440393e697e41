"""``fleet mkv show|rebuild|rebalance ARRAY``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fleet.exitcodes import Exit
from fleet.inventory.load import load_inventory
from fleet.mkv.flags import ArrayFlags, UnknownArrayError, array_flags
from fleet.mkv.ops import MasterHost, MkvOpError, OpReport, StaleUnitError, run_maintenance


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("mkv", help="minikeyvalue maintenance with each array's own flags",
                       description="mkv's rebuild and rebalance need the array's own "
                                   "-volumes, -replicas and -subvolumes; these run them on "
                                   "the array's master host through Salt, with the master "
                                   "unit stopped for the run and started again after.",
                       epilog="exit codes: 0 ok, 1 invalid inventory, 2 usage, 3 the master "
                              "unit's flags differ from the inventory (apply mkv.master "
                              "first), 5 a step failed (the unit is started again)")
    s = p.add_subparsers(dest="mkv_verb", required=True, metavar="ACTION")
    for verb, text in (("show", "the array's master, volumes and mkv command lines"),
                       ("rebuild", "rebuild the array's index from its volumes"),
                       ("rebalance", "move keys to where placement puts them")):
        sp = s.add_parser(verb, parents=[common], help=text, description=text)
        sp.add_argument("array", help="the array's name in the inventory (mkv.arrays)")
        if verb != "show":
            sp.add_argument("--salt-config", type=Path, default=Path("/etc/salt"),
                            metavar="DIR", help="the Salt master's config dir (-c of salt)")
            sp.add_argument("--timeout", type=float, default=86400.0, metavar="S",
                            help="seconds the mkv run may take (default 86400)")
            sp.add_argument("--dry-run", action="store_true",
                            help="check the master unit and print the command; run nothing")
        sp.set_defaults(func=cmd_mkv)


def cmd_mkv(args: argparse.Namespace, progress: Any) -> int:
    from fleet.master.runner import runner_for

    inv = load_inventory(args.inventory, args.overlay)
    try:
        flags = array_flags(inv, args.array)
    except UnknownArrayError as exc:
        print(f"fleet mkv: {exc}", file=sys.stderr)
        return Exit.USAGE
    if not flags.volumes:
        print(f"fleet mkv: array {flags.name} has no volumes", file=sys.stderr)
        return Exit.USAGE
    if args.mkv_verb == "show":
        _show(args, flags)
        return Exit.OK
    host = MasterHost(runner_for(args.salt_config), flags.master)
    say = (lambda msg: None) if args.quiet else \
        (lambda msg: print(f"fleet mkv: {msg}", file=sys.stderr, flush=True))
    try:
        if args.dry_run:
            from fleet.mkv.ops import check_unit

            binary, user = check_unit(host, flags)
            print(f"{flags.master}: systemctl stop {flags.unit}; "
                  f"{' '.join(flags.argv(binary, args.mkv_verb))} (as {user}); "
                  f"systemctl start {flags.unit}")
            return Exit.OK
        report = run_maintenance(host, flags, args.mkv_verb, timeout=args.timeout, say=say)
    except StaleUnitError as exc:
        print(f"fleet mkv: {exc}", file=sys.stderr)
        return Exit.DIFFERS
    except MkvOpError as exc:
        print(f"fleet mkv: {exc}", file=sys.stderr)
        return Exit.FAILED
    _print_report(args, flags, report)
    return Exit.OK if report.ok else Exit.FAILED


def _show(args: argparse.Namespace, flags: ArrayFlags) -> None:
    """The array as fleet mkv would run it: master, unit, volumes, flags, command lines."""
    shown = {"array": flags.name, "master": flags.master, "unit": flags.unit,
             "volumes": list(flags.volumes), "replicas": flags.replicas,
             "subvolumes": flags.subvolumes, "index_path": flags.index_path,
             "argv": {v: flags.argv("MKV", v) for v in ("server", "rebuild",
                                                        "rebalance")}}
    if args.json:
        print(json.dumps(shown, indent=2))
    else:
        for key in ("array", "master", "unit", "replicas", "subvolumes", "index_path"):
            print(f"{key}: {shown[key]}")
        print(f"volumes: {','.join(flags.volumes)}")
        for verb in ("rebuild", "rebalance"):
            print(f"{verb}: {' '.join(flags.argv('MKV', verb))}  (MKV: the unit's binary)")


def _print_report(args: argparse.Namespace, flags: ArrayFlags, report: OpReport) -> None:
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
    elif not args.quiet:
        print(f"{flags.name}: {args.mkv_verb} on {flags.master} exited {report.returncode}; "
              f"{flags.unit} " + ("active again" if report.restarted else "NOT active"))
        tail = (report.stderr.strip() or report.stdout.strip()).splitlines()[-5:]
        for line in tail:
            print(f"  {line}")
