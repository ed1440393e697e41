"""`fleet lab up|down|status|apply` (also `python -m fleet.lab ...`)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from fleet.exitcodes import Exit
from fleet.lab import lab
from fleet.lab.paths import LabOSError, Paths
from fleet.lab.run import LabError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Hook for fleet.cli: `fleet lab ...`."""
    p = sub.add_parser("lab", help="the containerized lab (docs/lab.md)",
                       description="Bring up the lab: the inventory through lab/overlay.yaml "
                                   "as systemd containers converged by a local Salt master.")
    _fill(p)
    p.set_defaults(quiet=False, debug=False)  # what fleet.cli.main reads of every verb


def _fill(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="store_true", help="log every step")
    s = p.add_subparsers(dest="lab_verb", required=True, metavar="ACTION")
    up = s.add_parser("up", help="build/reuse the image, start master and nodes, highstate")
    up.add_argument("--no-apply", action="store_true", help="do not apply the highstate")
    up.add_argument("--json", metavar="FILE", help="write timings and results as JSON")
    down = s.add_parser("down", help="remove the containers, the network, the master and "
                                     ".lab/ state; keep the cached image")
    down.add_argument("--all", action="store_true", dest="everything",
                      help="also remove the image and the wheelhouse (everything)")
    s.add_parser("status", help="master and containers")
    s.add_parser("apply", help="re-render the lab and apply the highstate on every node")
    p.set_defaults(func=run_lab)


def run_lab(args: argparse.Namespace, *_: object) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="[lab] %(message)s")
    logging.getLogger("fleet.lab").setLevel(logging.INFO)
    try:
        paths = Paths.find()
    except LabOSError as exc:
        print(f"fleet lab: {exc}", file=sys.stderr)
        return Exit.USAGE
    try:
        if args.lab_verb == "up":
            timings, results = lab.up(paths, apply=not args.no_apply)
            if args.json:
                Path(args.json).write_text(json.dumps(
                    {"timings": timings.steps, "results": [r.as_json() for r in results]},
                    indent=2))
            return Exit.FAILED if any(r.status.bad for r in results) else Exit.OK
        if args.lab_verb == "down":
            lab.down(paths, everything=args.everything)
        elif args.lab_verb == "status":
            print(lab.status(paths))
        elif args.lab_verb == "apply":
            lab.apply_all(paths)
    except LabError as exc:
        print(f"fleet lab: {exc}", file=sys.stderr)
        return Exit.FAILED
    return Exit.OK


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fleet lab")
    _fill(p)
    args = p.parse_args(argv)
    return run_lab(args)
