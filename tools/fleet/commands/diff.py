"""``fleet diff``: what a render would change, as a unified diff (with --json: the changed
files and the diff as one document)."""

from __future__ import annotations

import argparse
from typing import Any

from fleet.cliparts import Parents, add_command
from fleet.commands._render import add_output, show_diff
from fleet.context import Context
from fleet.exitcodes import Exit

DESCRIPTION = "Show a unified diff of what `fleet render` would change; exit 3 if anything would."
EPILOG = """
exit codes: 0 nothing would change, 1 invalid inventory, 2 usage, 3 a render would change
files, 4 the inventory or the output could not be read
"""


def register(sub: Any, parents: Parents) -> None:
    add_output(add_command(sub, parents, "diff", DESCRIPTION, EPILOG))


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    return show_diff(args, ctx)
