"""``fleet lab up|images|down|status|apply``: the containerized lab (docs/lab.md; the Makefile's
lab targets run it). Its inventory is always the checkout's ``inventory.yaml`` through
``lab/overlay.yaml``, so ``lab`` takes the output options of every verb (--json, -q, -v,
--debug) but not -i or --overlay."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleet.cliparts import Parents, add_actions, output_options
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.output import highstate_node

if TYPE_CHECKING:
    from fleet.master.highstate import NodeResult

DESCRIPTION = ("Bring up the lab: the inventory through lab/overlay.yaml as systemd "
               "containers converged by a local Salt master.")
EPILOG = ("exit codes: 0 ok, 2 usage (not in a fleet checkout), 5 a step or a node's "
          "highstate failed")


def register(sub: Any, parents: Parents) -> None:
    """``parents`` (the inventory options) are not the lab's: it takes the output ones."""
    out = [output_options()]
    _p, s = add_actions(sub, "lab", DESCRIPTION, EPILOG)
    up = s.add_parser("up", parents=out,
                      help="build/reuse the image, start master and nodes, highstate")
    up.add_argument("--no-apply", action="store_true", help="do not apply the highstate")
    up.add_argument("--timings", metavar="FILE",
                    help="also write the steps' timings and the results to FILE (JSON)")
    s.add_parser("images", parents=out,
                 help="build/reuse the image and every node's image (what `up` needs "
                      "before a container starts); start nothing")
    down = s.add_parser("down", parents=out,
                        help="remove the containers, the network, the master and .lab/ "
                             "state; keep the cached image")
    down.add_argument("--all", action="store_true", dest="everything",
                      help="also remove the image and the wheelhouse (everything)")
    s.add_parser("status", parents=out, help="master and containers")
    s.add_parser("apply", parents=out,
                 help="re-render the lab and apply the highstate on every node")


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.lab import lab
    from fleet.lab.paths import LabOSError, Paths
    from fleet.lab.run import LabError

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="[lab] %(message)s")
    logging.getLogger("fleet.lab").setLevel(logging.INFO)
    try:
        paths = Paths.find()
    except LabOSError as exc:
        print(f"fleet lab: {exc}", file=sys.stderr)
        return Exit.USAGE
    doc: dict[str, Any] = {"action": args.lab_verb}
    results: list[NodeResult] = []
    try:
        if args.lab_verb == "up":
            timings, results = lab.up(paths, apply=not args.no_apply)
            doc["timings"] = timings.steps
            if args.timings:
                Path(args.timings).write_text(json.dumps(
                    {"timings": timings.steps, "results": [r.as_json() for r in results]},
                    indent=2))
        elif args.lab_verb == "images":
            timings = lab.Timings()
            lab.prepare(paths, timings)
            doc["timings"] = timings.steps
        elif args.lab_verb == "down":
            lab.down(paths, everything=args.everything)
        elif args.lab_verb == "status":
            doc["status"] = lab.status(paths)
            if not ctx.out.json:
                print(doc["status"])
        elif args.lab_verb == "apply":
            results = lab.apply_all(paths)
    except LabError as exc:
        print(f"fleet lab: {exc}", file=sys.stderr)
        return Exit.FAILED
    if ctx.out.json:
        ctx.out.emit({**doc, "nodes": [highstate_node(r) for r in results]})
    return Exit.FAILED if any(r.status.bad for r in results) else Exit.OK
