"""What ``fleet render`` and ``fleet diff`` share (not a verb): their -o DIR, the rendered
files of the inventory, and the diff (``fleet render --diff`` is ``fleet diff``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fleet.context import Context
from fleet.exitcodes import Exit

if TYPE_CHECKING:
    from fleet.inventory.model import Inventory


def add_output(p: argparse.ArgumentParser) -> None:
    """-o DIR of render and diff."""
    p.add_argument("-o", "--output", default=".", metavar="DIR",
                   help="directory holding pillar/, pxe/ and pictures/ (default: .)")


def rendered(ctx: Context) -> tuple[Inventory, dict[str, str]]:
    from fleet.render import render_all  # jinja2 and the templates: not needed to validate

    inv = ctx.inventory()
    ctx.progress(f"rendering pillar and pxe for {len(inv.nodes)} nodes")
    files = render_all(inv)
    ctx.progress(f"{len(files)} files rendered")
    return inv, files


def show_diff(args: argparse.Namespace, ctx: Context) -> Exit:
    """`fleet diff` and `fleet render --diff`: what a render would change."""
    from fleet.render import tree, volumes

    inv, files = rendered(ctx)
    root = Path(args.output)
    changes = tree.compare(root, files)
    notes = []
    for r in volumes.removals(inv, volumes.previous_volumes(root)):
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
