"""``fleet log [--since WHEN] [--node N] [--json]``: the audit log, who ran which changing
verb on which nodes and how it ended (fleet.audit; argparse glue and the table)."""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fleet.cliparts import Parents, add_command
from fleet.context import Context
from fleet.exitcodes import Exit

DESCRIPTION = """
The audit log of the master: one record per run of a verb that changes something (apply,
rollout, reinstall, render, power on/off/cycle/reset, pxe set, keys check --remove, mkv
rebuild/rebalance, secrets init, backup, restore), with when, who (the user and the sudo
user), the arguments, the target and the outcome. The same records are in the systemd
journal (journalctl SYSLOG_IDENTIFIER=fleet FLEET_VERB=power). See docs/operations.md.
"""
EPILOG = """
exit codes: 0 ok (also when no record matches), 1 invalid inventory, 2 usage (a bad --since,
a --node that is no node), 4 the log could not be read or holds a line that is no record
"""
_AGO = re.compile(r"(\d+)([smhd])")
_UNIT = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def since(text: str) -> datetime:
    """``2h``, ``3d``, ``30m`` ago, or an ISO date or time (UTC unless it says)."""
    ago = _AGO.fullmatch(text)
    if ago:
        return datetime.now(UTC) - timedelta(**{_UNIT[ago[2]]: int(ago[1])})
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give an age (30m, 2h, 3d) or an ISO date/time (2026-12-05T01:00)"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def register(sub: Any, parents: Parents) -> None:
    from fleet.audit.log import WHERE

    p = add_command(sub, parents, "log", DESCRIPTION, EPILOG)
    p.add_argument("--since", type=since, metavar="WHEN",
                   help="only runs since WHEN: an age (30m, 2h, 3d) or an ISO date/time")
    p.add_argument("--node", metavar="NODE",
                   help="only runs that touched NODE (named, or in their target's range or "
                        "glob; a run of the default target touched every node)")
    p.add_argument("--log", type=Path, default=WHERE.path(), metavar="FILE",
                   help=f"the audit log (default ${WHERE.env} or {WHERE.default})")


def _line(r: dict[str, Any]) -> str:
    by = r["user"] + (f"(sudo {r['sudo_user']})" if r.get("sudo_user") else "")
    words = " ".join(w for w in (r["verb"], r.get("action"), r.get("target")) if w)
    return f"{_when(r['time'])}  {by:<18} fleet {words}  -> {r['outcome']} (exit {r['exit']})"


def _when(text: str) -> str:
    """A record's ISO time as people read it (UTC and its age); as written when it is none."""
    from fleet.master.text import clean, stamp

    try:
        return stamp(datetime.fromisoformat(text).timestamp())
    except (TypeError, ValueError):
        return clean(text, 40)


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.audit.log import LogError, Query, read, select

    inv = ctx.inventory()
    if args.node is not None and args.node not in inv.nodes and args.node not in inv.retired:
        print(f"fleet log: --node {args.node}: no such node in the inventory", file=sys.stderr)
        ctx.out.error(f"--node {args.node}: no such node in the inventory")
        return Exit.USAGE
    try:
        records = select(read(args.log), Query(args.since, args.node)) \
            if args.log.exists() else []
    except (OSError, LogError) as exc:
        print(f"fleet log: {exc}", file=sys.stderr)
        ctx.out.error(str(exc))
        return Exit.IO
    if ctx.out.json:
        ctx.out.emit({"log": str(args.log), "records": records})
    elif not ctx.out.quiet:
        if not args.log.exists():
            print(f"fleet log: {args.log}: no record yet", file=sys.stderr)
        for r in records:
            print(_line(r))
    return Exit.OK
