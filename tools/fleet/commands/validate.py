"""``fleet validate``: check the inventory and report every error."""

from __future__ import annotations

import argparse
import os
from typing import Any

from fleet.cliparts import Parents, add_command, add_secrets
from fleet.context import Context
from fleet.exitcodes import Exit

DESCRIPTION = "Check the inventory and report every error as file:line:column: path: message."
EPILOG = "exit codes: 0 valid, 1 invalid inventory, 2 usage, 4 the inventory cannot be read"


def register(sub: Any, parents: Parents) -> None:
    p = add_command(sub, parents, "validate", DESCRIPTION, EPILOG)
    add_secrets(p, "also check that every password_secret has a value in DIR/bmc (errors; "
                "without it, a ./secrets found here gives warnings, as for render)",
                dest="check_secrets", default=None)


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.render.summary import format_summary, summarize

    inv = ctx.inventory()
    summary = summarize(inv)
    ctx.warn(inv)
    if ctx.out.json:
        ctx.out.emit({"inventory": os.fspath(args.inventory), "summary": summary,
                      "warnings": [w.as_dict() for w in inv.warnings]})
    elif not args.quiet:
        print(f"{args.inventory}: valid")
        print(format_summary(summary))
    return Exit.OK
