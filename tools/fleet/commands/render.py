"""``fleet render [--check | --diff]``: write pillar/, pxe/ and pictures/ atomically."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleet.cliparts import Parents, add_command, add_modes
from fleet.commands._render import add_output, rendered, show_diff
from fleet.context import Checked, Context
from fleet.exitcodes import Exit

if TYPE_CHECKING:
    from fleet.render.prefetch import Prefetch
    from fleet.render.tree import Changes

DESCRIPTION = """
Render pillar/, pxe/ and pictures/ from the inventory. Output is built aside and swapped in
atomically; unchanged files are not rewritten; an invalid inventory writes nothing.
"""
EPILOG = """
exit codes: 0 written (--check: up to date), 1 invalid inventory (or a volume removal not
acknowledged: nothing written), 2 usage, 3 --check/--diff: the output differs, 4 the
inventory or the output could not be read or written (or another render writes there)
"""


def register(sub: Any, parents: Parents) -> None:
    p = add_command(sub, parents, "render", DESCRIPTION, EPILOG)
    add_output(p)
    add_modes(p, ("--check", "write nothing; exit 3 and list files if the output is out of date"),
              ("--diff", "write nothing; show what a render would change (same as `fleet diff`)"))


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    if args.diff:
        return show_diff(args, ctx)
    root = Path(args.output)
    if args.check:  # exact: a full render compared with every file, never the store
        _inv, files = rendered(ctx)
        return _check(args, ctx, root, files)
    if not root.is_dir():  # nothing to read first; the writer makes it and locks it
        return _render(args, ctx, root, None)
    from fleet.render import journal, tree
    from fleet.render.prefetch import Prefetch

    # Locked from the first read of the output to the commit: what the reader sees (and a
    # killed render's commit, finished first) is what the writer replaces.
    with tree.lock(root):
        journal.recover(root)
        prefetch = Prefetch(root)  # the output, read while the inventory is validated
        try:
            return _render(args, ctx, root, prefetch)
        finally:
            prefetch.close()


def _render(args: argparse.Namespace, ctx: Context, root: Path,
            prefetch: Prefetch | None) -> Exit:
    # Into an output already there, the rules' verdict on a large inventory is reached by a
    # forked child while this process plans and renders, and waited for before anything is
    # printed or written (fleet.context.Checked); an invalid inventory still writes nothing.
    with ctx.inventory_pending(behind=prefetch is not None) as checked:
        try:
            return _checked(args, ctx, checked, root, prefetch)
        except Exception:
            checked.wait()  # an invalid inventory's problems, not what they broke
            raise


def _checked(args: argparse.Namespace, ctx: Context, checked: Checked, root: Path,
             prefetch: Prefetch | None) -> Exit:
    from fleet.render import volumes

    inv = checked.inv
    before = (volumes.previous_volumes(root) if prefetch is None else
              prefetch.result().volumes)
    removals = volumes.removals(inv, before)
    refused = [r for r in removals if not r.acknowledged]
    if refused:
        checked.wait()
        for r in refused:
            print(f"{args.inventory}: {r.field}: {r.text()} (acknowledge: {r.field}: "
                  f"[{', '.join(r.hosts)}])", file=sys.stderr)
        print(f"{len(refused)} error{'s' if len(refused) != 1 else ''}; nothing was written",
              file=sys.stderr)
        return Exit.INVALID
    return _write(args, ctx, checked, root, [r.text() for r in removals], prefetch)


def _check(args: argparse.Namespace, ctx: Context, root: Path, files: dict[str, str]) -> Exit:
    from fleet.render import tree

    ctx.progress(f"comparing with {root}")
    changes = tree.compare(root, files)
    if ctx.out.json:
        ctx.out.emit({"added": changes.added, "changed": changes.changed,
                      "removed": changes.removed, "interrupted": changes.interrupted})
    elif changes.any:
        if changes.interrupted:
            print(f"interrupted: {changes.interrupted}")
        for label, paths in (("missing", changes.added), ("differs", changes.changed),
                             ("stale", changes.removed)):
            for p in paths:
                print(f"{label}: {p}")
        print(f"rendered output is out of date ({len(changes.added)} missing, "
              f"{len(changes.changed)} differ, {len(changes.removed)} stale); "
              "run `make render` and commit the result", file=sys.stderr)
    elif not args.quiet:
        print(f"rendered output is up to date ({changes.unchanged} files)")
    return Exit.DIFFERS if changes.any else Exit.OK


def _incremental(ctx: Context, checked: Checked, root: Path,
                 prefetch: Prefetch | None = None) -> Changes:
    """Render the nodes whose inputs changed (all of them where the store beside the
    output cannot tell: :mod:`fleet.render.incremental`), write once the inventory has
    passed (``checked``), record the inputs."""
    from fleet.render import cold, incremental, tree

    inv = checked.inv
    ctx.progress(f"rendering for {len(inv.nodes)} nodes")
    p = incremental.plan(root, inv, prefetch.result() if prefetch is not None else None)
    if p.nodes is None:  # into an output not there yet, workers write what they render
        checked.wait()
        written = cold.write(root, inv, p)
        if written is not None:
            ctx.progress(f"{len(written.added)} files rendered and written ({p.why})")
            incremental.save(root, p)
            return written
    r = incremental.render(root, inv, p=p)
    ctx.progress(f"{len(r.files)} files rendered, {len(r.keep)} kept ({r.plan.why})")
    ctx.progress(f"writing into {root.resolve()}")
    try:
        listing = prefetch.result().listing if prefetch is not None else None
        changes = tree.write(root, r.files, r.keep, r.removable, listing, checked.wait)
    except tree.KeptFileMissingError as exc:
        ctx.progress(f"{exc}: rendering every node")
        r = incremental.full(inv, r.plan)
        changes = tree.write(root, r.files, gate=checked.wait)
    incremental.save(root, r.plan)
    return changes


def _write(args: argparse.Namespace, ctx: Context, checked: Checked, root: Path,
           notes: list[str], prefetch: Prefetch | None = None) -> Exit:
    from fleet.render.summary import format_summary, summarize

    inv = checked.inv
    changes = _incremental(ctx, checked, root, prefetch)
    for note in notes:  # acknowledged removals: what to run next
        print(f"note: {note}", file=sys.stderr)
    ctx.progress("done")
    ctx.warn(inv)
    if ctx.out.json:
        ctx.out.emit({"written": len(changes.added) + len(changes.changed),
                      "added": changes.added, "changed": changes.changed,
                      "removed": changes.removed, "unchanged": changes.unchanged,
                      "summary": summarize(inv), "warnings": [w.as_dict() for w in inv.warnings]})
    elif not args.quiet:
        print(format_summary(summarize(inv)))
        print(f"files: {len(changes.added)} added, {len(changes.changed)} changed, "
              f"{len(changes.removed)} removed, {changes.unchanged} unchanged")
    return Exit.OK
