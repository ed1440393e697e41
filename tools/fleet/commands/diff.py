"""``fleet diff``: what a render would change, as a unified diff (with --json: the changed
files and the diff as one document)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fleet.cliparts import Parents, add_command
from fleet.commands.render import add_output, rendered
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
    from fleet.render import tree, volumes

    inv, files = rendered(ctx)
    root = Path(args.output)
    changes = tree.compare(root, files)
    notes = []
    for r in volumes.removals(inv, root):
        state = ("acknowledged" if r.acknowledged
                 else f"`fleet render` refuses it until {r.field} lists them")
        notes.append(f"{args.inventory}: {r.field}: {r.text()} ({state})")
        print(notes[-1], file=sys.stderr)
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in tree.unified_diff(root, files, changes))
    if ctx.out.json:
        ctx.out.emit({"added": changes.added, "changed": changes.changed,
                      "removed": changes.removed, "removals": notes, "diff": text})
    else:
        sys.stdout.write(text)
    if not args.quiet:
        print(f"{len(changes.added)} added, {len(changes.changed)} changed, "
              f"{len(changes.removed)} removed", file=sys.stderr)
    return Exit.DIFFERS if changes.any else Exit.OK
