"""``fleet mkv show|rebuild|rebalance ARRAY``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from fleet.cliparts import Parents, add_actions, add_salt_config
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.signals import long_verb

if TYPE_CHECKING:
    from fleet.mkv.flags import ArrayFlags
    from fleet.mkv.ops import OpReport


# what a SIGINT/SIGTERM leaves (fleet.signals.long_verb)
STOPPED = ('the mkv tool was stopped mid-run (its rebuild or rebalance starts over when run '
           'again)')


def register(sub: Any, parents: Parents) -> None:
    _p, s = add_actions(
        sub, "mkv", "mkv's rebuild and rebalance need the array's own -volumes, -replicas and "
                    "-subvolumes; these run them on the array's master host through Salt, "
                    "with the master unit stopped for the run and started again after.",
        "exit codes: 0 ok, 1 invalid inventory, 2 usage, 3 the master unit's flags differ "
        "from the inventory (apply mkv.master first), 4 the array's master host could not "
        "be reached through Salt, 5 a step failed (the unit is started again)")
    for verb, text in (("show", "the array's master, volumes and mkv command lines"),
                       ("rebuild", "rebuild the array's index from its volumes"),
                       ("rebalance", "move keys to where placement puts them")):
        sp = s.add_parser(verb, parents=list(parents), help=text, description=text)
        sp.add_argument("array", help="the array's name in the inventory (mkv.arrays)")
        if verb != "show":
            add_salt_config(sp)
            sp.add_argument("--timeout", type=float, default=86400.0, metavar="S",
                            help="seconds the mkv run may take (default 86400)")
            sp.add_argument("--dry-run", action="store_true",
                            help="check the master unit and print the command; run nothing")


@long_verb(STOPPED)
def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.mkv.flags import UnknownArrayError, array_flags
    from fleet.mkv.ops import (
        MasterHost,
        MkvOpError,
        NoAnswerError,
        StaleUnitError,
        run_maintenance,
    )

    inv = ctx.inventory()
    try:
        flags = array_flags(inv, args.array)
    except UnknownArrayError as exc:
        print(f"fleet mkv: {exc}", file=sys.stderr)
        return Exit.USAGE
    if not flags.volumes:
        print(f"fleet mkv: array {flags.name} has no volumes", file=sys.stderr)
        return Exit.USAGE
    if args.mkv_verb == "show":
        _show(args, ctx, flags)
        return Exit.OK
    host = MasterHost(ctx.runner(), flags.master)
    say = (lambda msg: None) if args.quiet else \
        (lambda msg: print(f"fleet mkv: {msg}", file=sys.stderr, flush=True))
    try:
        if args.dry_run:
            from fleet.mkv.ops import check_unit

            binary, user = check_unit(host, flags)
            line = (f"{flags.master}: systemctl stop {flags.unit}; "
                    f"{' '.join(flags.argv(binary, args.mkv_verb))} (as {user}); "
                    f"systemctl start {flags.unit}")
            if ctx.out.json:
                ctx.out.emit({"array": flags.name, "dry_run": line})
            else:
                print(line)
            return Exit.OK
        report = run_maintenance(host, flags, args.mkv_verb, timeout=args.timeout, say=say)
    except MkvOpError as exc:  # the unit not as rendered; no answer; the tool failed
        print(f"fleet mkv: {exc}", file=sys.stderr)
        return Exit.DIFFERS if isinstance(exc, StaleUnitError) else \
            Exit.IO if isinstance(exc, NoAnswerError) else Exit.FAILED
    _print_report(args, ctx, flags, report)
    return Exit.OK if report.ok else Exit.FAILED


def _show(args: argparse.Namespace, ctx: Context, flags: ArrayFlags) -> None:
    """The array as fleet mkv would run it: master, unit, volumes, flags, command lines."""
    shown = {"array": flags.name, "master": flags.master, "unit": flags.unit,
             "volumes": list(flags.volumes), "replicas": flags.replicas,
             "subvolumes": flags.subvolumes, "index_path": flags.index_path,
             "argv": {v: flags.argv("MKV", v) for v in ("server", "rebuild",
                                                        "rebalance")}}
    if args.json:
        ctx.out.emit(shown)
    else:
        for key in ("array", "master", "unit", "replicas", "subvolumes", "index_path"):
            print(f"{key}: {shown[key]}")
        print(f"volumes: {','.join(flags.volumes)}")
        for verb in ("rebuild", "rebalance"):
            print(f"{verb}: {' '.join(flags.argv('MKV', verb))}  (MKV: the unit's binary)")


def _print_report(args: argparse.Namespace, ctx: Context, flags: ArrayFlags,
                  report: OpReport) -> None:
    if args.json:
        ctx.out.emit(report.as_json())
    elif not args.quiet:
        print(f"{flags.name}: {args.mkv_verb} on {flags.master} exited {report.returncode}; "
              f"{flags.unit} " + ("active again" if report.restarted else "NOT active"))
        tail = (report.stderr.strip() or report.stdout.strip()).splitlines()[-5:]
        for line in tail:
            print(f"  {line}")
