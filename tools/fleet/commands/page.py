"""``fleet page [--out DIR] [--status FILE]``: write the fleet page (static files,
layout.json, the status document and view.json) into DIR."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fleet.cliparts import Parents, add_command
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.master.statedir import PAGE

EPILOG = """
exit codes: 0 written, 1 invalid inventory, 2 usage, 4 the status document could not be
read, parsed or collected in time, or DIR not written
"""


def register(sub: Any, parents: Parents) -> None:
    p = add_command(
        sub, parents, "page",
        description="Write the fleet page into DIR: index.html, page.js, page.css, "
                    "layout.json (the racks and each node's inventory facts), status.json "
                    "(the `fleet status --json` document) and view.json (each node's "
                    "state), each file atomically, view.json last. Without --status, runs "
                    "`fleet status --json` for the document.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=PAGE.path(), metavar="DIR",
                   help=f"the page's directory (default: ${PAGE.env}, else {PAGE.default}: "
                        "what nginx serves)")
    p.add_argument("--status", type=Path, metavar="FILE",
                   help="a `fleet status --json` document to show (default: run it)")
    p.add_argument("--cabling", type=Path, metavar="FILE",
                   help="a `fleet cabling --json` document to show (default: run it when "
                        "fleet status is run; with --status FILE, none unless given)")


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
        doc = json.loads(proc.stdout)
    except ValueError as exc:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        raise StatusError(f"`{' '.join(cmd[1:])}` (exit {proc.returncode}) gave no JSON "
                          f"document: {exc}; {tail[0]}", Exit.IO) from exc
    if isinstance(doc, dict) and "nodes" not in doc:  # it failed before it had any node
        said = "; ".join(str(e.get("message", e)) for e in doc.get("errors", [])
                         if isinstance(e, dict))
        raise StatusError(f"`{' '.join(cmd[1:])}` (exit {proc.returncode}) failed: "
                          f"{said or 'no nodes in its document'}", Exit.IO)
    return doc


def _read_status(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StatusError(f"{path}: {exc.strerror or exc}", Exit.IO) from exc
    except ValueError as exc:
        raise StatusError(f"{path}: not a JSON document ({exc}); give the output of "
                          "`fleet status --json`", Exit.IO) from exc


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.page import write

    inv = ctx.inventory()
    try:
        doc = _read_status(args.status) if args.status else _run_status(args)
    except StatusError as exc:
        print(f"fleet page: {exc}", file=sys.stderr)
        return Exit(exc.code)
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
        ctx.out.emit({"out": str(args.out), "changed": changed})
    elif not args.quiet:
        print(f"{args.out}: fleet page written ({len(inv.nodes)} nodes; "
              f"{len(changed)} file(s) changed)")
    return Exit.OK
