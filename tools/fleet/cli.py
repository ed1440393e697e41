"""The ``fleet`` command line.

Exit codes: :class:`fleet.exitcodes.Exit`, the same for every verb (each verb's
``--help`` says what they mean for it).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fleet import __version__
from fleet.cliparts import add_modes
from fleet.exitcodes import Exit
from fleet.exitcodes import summary as exit_summary
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.problems import InventoryError, format_json, format_text
from fleet.pxe.cli import add_parser as add_pxe_parser
from fleet.render.errors import RenderBusyError
from fleet.render.summary import format_summary, summarize


class Progress:
    """Stage messages on stderr, only for a person at a terminal (or with --verbose)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def __call__(self, msg: str) -> None:
        if self.enabled:
            print(f"[{time.perf_counter() - self.t0:6.2f}s] {msg}", file=sys.stderr, flush=True)


def _load(args: argparse.Namespace, progress: Progress) -> Inventory:
    """The inventory, the same for every verb: the secrets store is checked (as errors)
    only when ``--secrets`` names it; a ``./secrets`` found here only adds warnings."""
    progress(f"validating {args.inventory}")
    store = getattr(args, "check_secrets", None)
    found = Path("secrets") if store is None and Path("secrets").is_dir() else None
    inv = load_inventory(args.inventory, args.overlay, secrets=store, advise=found)
    progress(f"{len(inv.nodes)} nodes valid")
    return inv


def _warn(inv: Inventory, args: argparse.Namespace) -> None:
    """The inventory's warnings on stderr (not with -q or --json: JSON carries them)."""
    if not args.quiet and not args.json:
        for w in inv.warnings:
            print(f"warning: {w}", file=sys.stderr)


def cmd_validate(args: argparse.Namespace, progress: Progress) -> int:
    inv = _load(args, progress)
    summary = summarize(inv)
    _warn(inv, args)
    if args.json:
        print(json.dumps({"ok": True, "inventory": os.fspath(args.inventory),
                          "summary": summary,
                          "warnings": [w.as_dict() for w in inv.warnings]}, indent=2))
    elif not args.quiet:
        print(f"{args.inventory}: valid")
        print(format_summary(summary))
    return Exit.OK


def _render(args: argparse.Namespace, progress: Progress) -> tuple[Inventory, dict[str, str]]:
    from fleet.render import render_all  # jinja2 and the templates: not needed to validate

    inv = _load(args, progress)
    progress(f"rendering pillar and pxe for {len(inv.nodes)} nodes")
    files = render_all(inv)
    progress(f"{len(files)} files rendered")
    return inv, files


def cmd_render(args: argparse.Namespace, progress: Progress) -> int:
    from fleet.render import tree, volumes

    if args.diff:
        return cmd_diff(args, progress)
    inv, files = _render(args, progress)
    root = Path(args.output)
    if args.check:
        progress(f"comparing with {root}")
        changes = tree.compare(root, files)
        if args.json:
            print(json.dumps({"ok": not changes.any, "added": changes.added,
                              "changed": changes.changed, "removed": changes.removed,
                              "interrupted": changes.interrupted}, indent=2))
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
    removals = volumes.removals(inv, root)
    refused = [r for r in removals if not r.acknowledged]
    if refused:
        for r in refused:
            print(f"{args.inventory}: {r.field}: {r.text()} (acknowledge: {r.field}: "
                  f"[{', '.join(r.hosts)}])", file=sys.stderr)
        print(f"{len(refused)} error{'s' if len(refused) != 1 else ''}; nothing was written",
              file=sys.stderr)
        return Exit.INVALID
    progress(f"writing into {root.resolve()}")
    changes = tree.write(root, files)
    for r in removals:  # acknowledged ones: what to run next
        print(f"note: {r.text()}", file=sys.stderr)
    progress("done")
    summary = summarize(inv)
    _warn(inv, args)
    if args.json:
        print(json.dumps({"ok": True, "written": len(changes.added) + len(changes.changed),
                          "added": changes.added, "changed": changes.changed,
                          "removed": changes.removed, "unchanged": changes.unchanged,
                          "summary": summary,
                          "warnings": [w.as_dict() for w in inv.warnings]}, indent=2))
    elif not args.quiet:
        print(format_summary(summary))
        print(f"files: {len(changes.added)} added, {len(changes.changed)} changed, "
              f"{len(changes.removed)} removed, {changes.unchanged} unchanged")
    return Exit.OK


def cmd_diff(args: argparse.Namespace, progress: Progress) -> int:
    from fleet.render import tree, volumes

    inv, files = _render(args, progress)
    root = Path(args.output)
    changes = tree.compare(root, files)
    for r in volumes.removals(inv, root):
        state = ("acknowledged" if r.acknowledged
                 else f"`fleet render` refuses it until {r.field} lists them")
        print(f"{args.inventory}: {r.field}: {r.text()} ({state})", file=sys.stderr)
    for line in tree.unified_diff(root, files, changes):
        sys.stdout.write(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    if not args.quiet:
        print(f"{len(changes.added)} added, {len(changes.changed)} changed, "
              f"{len(changes.removed)} removed", file=sys.stderr)
    return Exit.DIFFERS if changes.any else Exit.OK


def cmd_secrets_init(args: argparse.Namespace, progress: Progress) -> int:
    from fleet import secrets

    inv = _load(args, progress)
    root = Path(args.secrets)
    created = secrets.init(root)
    wanted = {p.bmc.password_secret for p in inv.raw.profiles.values()}
    missing = secrets.missing_bmc_secrets(root, wanted)
    if args.json:
        print(json.dumps({"ok": True, "created": created, "missing_bmc_secrets": missing},
                         indent=2))
    elif not args.quiet:
        for path in created:
            print(f"created {path}")
        if not created:
            print(f"{root}: nothing to create (existing secrets are never overwritten)")
        for name in missing:
            print(f"missing: {root / 'bmc' / name} (the BMC password named by "
                  f"password_secret: {name}; write it there, mode 0600)")
    return Exit.OK


def _common_options() -> argparse.ArgumentParser:
    """The options every command has (a parent parser)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-i", "--inventory", type=Path,
                        default=Path(os.environ.get("FLEET_INVENTORY", "inventory.yaml")),
                        help="inventory file (default: $FLEET_INVENTORY or ./inventory.yaml)")
    common.add_argument("--overlay", type=Path, metavar="FILE", action="append",
                        help="apply a merge-patch overlay on the inventory (e.g. "
                             "lab/overlay.yaml); repeat to apply several, in order")
    common.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    common.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    common.add_argument("-v", "--verbose", action="store_true",
                        help="show progress with timings even when not on a terminal")
    common.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    return common


def _output_option() -> argparse.ArgumentParser:
    """-o DIR of render and diff (a parent parser)."""
    out = argparse.ArgumentParser(add_help=False)
    out.add_argument("-o", "--output", default=".", metavar="DIR",
                     help="directory holding pillar/, pxe/ and pictures/ (default: .)")
    return out


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    parser = argparse.ArgumentParser(
        prog="fleet",
        description="Declarative provisioning for a GPU datacenter: validate inventory.yaml "
                    "and render Salt pillars and PXE boot configs from it.",
        epilog=f"exit codes: {exit_summary()}")
    parser.add_argument("--version", action="version", version=f"fleet {__version__}")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    # in the order --help lists them
    _add_validate_render(sub, common)
    _add_secrets(sub, common)
    from fleet.reinstall.cli import add_parser as add_reinstall

    add_reinstall(sub, common)
    p = sub.add_parser("diff", parents=[common, _output_option()],
                       help="show what a render would change",
                       description="Show a unified diff of what `fleet render` would change; "
                                   "exit 3 if anything would.")
    p.set_defaults(func=cmd_diff)
    add_pxe_parser(sub, common, _load)
    _add_day_two(sub, common)
    return parser


def _add_validate_render(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("validate", parents=[common], help="check the inventory, report all errors",
                       description="Check the inventory and report every error as "
                                   "file:line:column: path: message.")
    p.add_argument("--secrets", dest="check_secrets", type=Path, metavar="DIR",
                   help="also check that every password_secret has a value in DIR/bmc "
                        "(errors; without it, a ./secrets found here gives warnings, as "
                        "for render)")
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("render", parents=[common, _output_option()],
                       help="write pillar/, pxe/ and pictures/",
                       description="Render pillar/, pxe/ and pictures/ from the inventory. "
                                   "Output is built "
                                   "aside and swapped in atomically; unchanged files are not "
                                   "rewritten; an invalid inventory writes nothing.")
    add_modes(p, ("--check", "write nothing; exit 3 and list files if the output is out of date"),
              ("--diff", "write nothing; show what a render would change (same as `fleet diff`)"))
    p.set_defaults(func=cmd_render)


def _add_secrets(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("secrets", help="manage the git-ignored secrets store",
                       description="The secrets store holds the munge key (a pillar root of "
                                   "the Salt master) and BMC passwords; see docs/secrets.md.")
    ssub = p.add_subparsers(dest="secrets_verb", required=True, metavar="ACTION")
    sp = ssub.add_parser("init", parents=[common], help="create what is missing (never "
                         "overwrites), with modes 0700/0600",
                         description="Create the secrets store: a new random munge key if "
                                     "there is none, and list the BMC passwords still "
                                     "missing.")
    sp.add_argument("--secrets", default="secrets", metavar="DIR",
                    help="the store (default: ./secrets)")
    sp.set_defaults(func=cmd_secrets_init)


def _add_day_two(sub: Any, common: argparse.ArgumentParser) -> None:
    """keys, mkv, health, rollout, apply, power, console, node, ports, status, page and lab
    (imported only as the parser is built)."""
    from fleet.apply.cli import add_parser as add_apply
    from fleet.cabling.cli import add_parser as add_cabling
    from fleet.health.cli import add_parser as add_health
    from fleet.keys.cli import add_parser as add_keys
    from fleet.lab.cli import add_parser as add_lab
    from fleet.mkv.cli import add_parser as add_mkv
    from fleet.ops.cli import add_parsers as add_ops
    from fleet.page.cli import add_parser as add_page
    from fleet.rollout.cli import add_parser as add_rollout
    from fleet.status.cli import add_parser as add_status

    add_keys(sub, common, _load)
    add_mkv(sub, common)
    add_health(sub, common, _load)
    add_rollout(sub, common, _load)
    add_apply(sub, common, _load)
    add_ops(sub, common, _load)
    add_status(sub, common, _load)
    add_cabling(sub, common, _load)
    add_page(sub, common, _load)
    add_lab(sub)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    progress = Progress(enabled=(args.verbose or sys.stderr.isatty()) and not args.quiet)
    func: Callable[[argparse.Namespace, Progress], int] = args.func
    # A run builds a large, acyclic heap and then exits: the cyclic garbage collector
    # would only re-scan it again and again as it grows (a third of load time for 10,000
    # nodes). Off for the run; back on for callers that run main() in-process (tests).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return func(args, progress)
    except InventoryError as exc:
        if args.json:
            print(format_json(exc.problems))
        else:
            print(format_text(exc.problems, wrote_nothing=args.verb == "render"),
                  file=sys.stderr)
        return Exit.INVALID
    except RenderBusyError as exc:
        print(f"fleet: {exc}", file=sys.stderr)
        return Exit.IO
    except OSError as exc:
        print(f"fleet: {exc.filename or ''}: {exc.strerror or exc}; previous output kept",
              file=sys.stderr)
        return Exit.IO
    except KeyboardInterrupt:
        print("fleet: interrupted; previous output kept", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug in fleet, not in the user's input
        if args.debug:
            traceback.print_exc()
        print(f"fleet: internal error: {type(exc).__name__}: {exc} (rerun with --debug for "
              "the traceback, and please report it)", file=sys.stderr)
        return Exit.INTERNAL
    finally:
        if collecting:
            gc.enable()


if __name__ == "__main__":
    sys.exit(main())
