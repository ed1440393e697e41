"""``fleet page [--out DIR] [--status FILE]``: write the fleet page (static files,
layout.json, the status document and view.json) into DIR."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fleet.cliparts import Loader
from fleet.exitcodes import Exit

DEFAULT_OUT = "/var/lib/fleet/page"
EPILOG = """
exit codes: 0 written, 1 invalid inventory, 2 usage, 4 the status document could not be
read, parsed or collected in time, or DIR not written
"""


def add_parser(sub: Any, common: argparse.ArgumentParser, load: Loader) -> None:
    p = sub.add_parser(
        "page", parents=[common], help="write the fleet page (racks coloured by live state)",
        description="Write the fleet page into DIR: index.html, page.js, page.css, "
                    "layout.json (the racks and each node's inventory facts), status.json "
                    "(the `fleet status --json` document) and view.json (each node's "
                    "state), each file atomically, view.json last. Without --status, runs "
                    "`fleet status --json` for the document.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=Path(DEFAULT_OUT), metavar="DIR",
                   help=f"the page's directory (default: {DEFAULT_OUT}, what nginx serves)")
    p.add_argument("--status", type=Path, metavar="FILE",
                   help="a `fleet status --json` document to show (default: run it)")
    p.add_argument("--cabling", type=Path, metavar="FILE",
                   help="a `fleet cabling --json` document to show (default: run it when "
                        "fleet status is run; with --status FILE, none unless given)")
    p.set_defaults(func=lambda a, pr: cmd_page(a, load, pr))


class StatusError(Exception):
    def __init__(self, msg: str, code: int) -> None:
        super().__init__(msg)
        self.code = code


STATUS_TIMEOUT = 600.0


def _run_status(args: argparse.Namespace, verb: str = "status") -> Any:
    """The document of ``fleet VERB --json`` run as a subprocess, on the same inventory
    (its exit code says ok or problems; only a document that does not parse is an error)."""
    cmd = [sys.executable, "-m", "fleet", verb, "--json", "-i", str(args.inventory)]
    for o in args.overlay or ():
        cmd += ["--overlay", str(o)]
    try:  # fleet status bounds each of its sources; this bounds the whole
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                              timeout=STATUS_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise StatusError(f"`{' '.join(cmd[1:])}` gave no answer within {STATUS_TIMEOUT:g}s",
                          Exit.IO) from None
    try:
        return json.loads(proc.stdout)
    except ValueError as exc:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        raise StatusError(f"`{' '.join(cmd[1:])}` (exit {proc.returncode}) gave no JSON "
                          f"document: {exc}; {tail[0]}", Exit.IO) from exc


def _read_status(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StatusError(f"{path}: {exc.strerror or exc}", Exit.IO) from exc
    except ValueError as exc:
        raise StatusError(f"{path}: not a JSON document ({exc}); give the output of "
                          "`fleet status --json`", Exit.IO) from exc


def cmd_page(args: argparse.Namespace, load: Loader, progress: Any) -> int:
    from fleet.page import write

    inv = load(args, progress)
    try:
        doc = _read_status(args.status) if args.status else _run_status(args)
    except StatusError as exc:
        print(f"fleet page: {exc}", file=sys.stderr)
        return exc.code
    wiring = None
    try:  # the cabling is a detail of the page: without it, the page still shows status
        if args.cabling:
            wiring = _read_status(args.cabling)
        elif not args.status:
            wiring = _run_status(args, "cabling")
    except StatusError as exc:
        print(f"fleet page: cabling not shown: {exc}", file=sys.stderr)
    changed = write.write(args.out, inv, doc, wiring=wiring)
    if args.json:
        print(json.dumps({"ok": True, "out": str(args.out), "changed": changed}, indent=2))
    elif not args.quiet:
        print(f"{args.out}: fleet page written ({len(inv.nodes)} nodes; "
              f"{len(changed)} file(s) changed)")
    return Exit.OK
