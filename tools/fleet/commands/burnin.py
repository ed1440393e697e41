"""``fleet burnin run TARGET``, ``fleet burnin status [TARGET]``, ``fleet burnin record NODE
--result FILE`` and ``fleet burnin finish NODE...|--all``: burn-in, the stage between
discovery and service."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fleet.cliparts import (
    Parents,
    add_action,
    add_actions,
    add_salt_config,
    add_slurm_command,
    add_store_dir,
    add_target,
)
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.signals import long_verb

EPILOG = """exit codes: 0 done (status: no node failed), 1 invalid inventory (or the edit
would make it invalid: nothing written), 2 usage, 4 a result or the inventory could not be
read or written (run: a node gave no result), 5 a node failed burn-in (run, status), a node
in service was left drained (run: its verdict did not pass) or could not finish (pending, or
its profile configures no check); run refuses (2) a node in service without --drain"""

# what a SIGINT/SIGTERM leaves (fleet.signals.long_verb)
STOPPED = ('a node drained for its burn-in stays drained, its result not recorded; run '
           '`fleet burnin run` again')
DRAIN_REASON = "fleet burnin run"
MAX_REASON = 200  # the inventory's Text


def register(sub: Any, parents: Parents) -> None:
    from fleet.master import statedir

    _p, actions = add_actions(
        sub, "burnin", "Burn-in between discovery and service: each node's results per "
        "check of its profile (profiles.<p>.burnin) against the profile's baseline, the "
        "median of the nodes that passed; an outlier fails.", EPILOG)
    helps = {"run": "run the profile's checks on the nodes through Salt and keep each "
                    "result (a node in service: --drain takes it out first)",
             "status": "each node's burn-in: progress, pass or fail, the failing check",
             "record": "keep a node's results (the runner's JSON: one result a line)",
             "finish": "burn-in -> active for nodes that passed, -> maintenance (reason: "
                       "the failing check) for those that failed, in inventory.yaml"}
    for name, text in helps.items():
        sp = add_action(actions, parents, name, text, EPILOG)
        add_store_dir(sp, "--results", statedir.BURNIN, "the results")
        if name == "run":
            sp.add_argument("target", metavar="TARGET",
                            help="inventory hostnames, ranges (tbox-[001-038]) or globs")
            sp.add_argument("--checks", metavar="C,C",
                            help="only these of the profile's checks (default: all)")
            sp.add_argument("--drain", action="store_true",
                            help="a node in service is drained first (its jobs end), "
                                 "resumed if its verdict passes (as `status` judges it: "
                                 "outliers fail), else left drained, the failure its reason")
            sp.add_argument("--drain-timeout", type=float, default=3600.0, metavar="S",
                            help="seconds to wait for a drained node's jobs (default 3600)")
            sp.add_argument("--partners-in-service", action="store_true",
                            help="ib-write-bw: an active node may be a node's partner "
                                 "(its jobs share the link; default: nodes under test or "
                                 "in burn-in only; nccl-pair: nodes in burn-in only)")
            add_salt_config(sp)
            add_slurm_command(sp)
        elif name == "status":
            add_target(sp, "'tbox-0*'")
        elif name == "record":
            sp.add_argument("node", metavar="NODE")
            sp.add_argument("--result", required=True, metavar="FILE",
                            help="the runner's JSON, one result a line, each kept as "
                                 "its check's latest ('-': stdin)")
        else:
            sp.add_argument("nodes", nargs="*", metavar="NODE")
            sp.add_argument("--all", action="store_true", help="every node in burn-in")
            sp.add_argument("--dry-run", action="store_true", help="write nothing")


def verdicts(inv: Any, root: Path) -> dict[str, Any]:
    """Every node's verdict (node -> Verdict), baselines over each whole profile."""
    from fleet.burnin import results
    from fleet.burnin.verdict import for_inventory

    return for_inventory(inv, {h: results.load(root, h) for h in inv.nodes})


@long_verb(STOPPED)
def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.burnin.results import ResultError
    from fleet.master.salt import MasterError

    try:
        return {"run": _run, "status": _status, "record": _record, "finish": _finish}[
            args.burnin_verb](args, ctx)
    except (OSError, ResultError, MasterError) as exc:
        print(f"fleet burnin: {exc}", file=sys.stderr)
        ctx.out.error(str(exc))
        return Exit.IO


def _run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.burnin import remote
    from fleet.burnin.results import ResultError
    from fleet.inventory.compute import preemptible_partition
    from fleet.inventory.schema.hardware import BURNIN_CHECKS
    from fleet.master import slurm
    from fleet.master.salt import MasterError, Salt

    inv, names = ctx.targets()
    only = args.checks.split(",") if args.checks else None
    unknown = sorted(set(only or ()) - set(BURNIN_CHECKS))
    if unknown:
        print(f"fleet burnin run: --checks {', '.join(unknown)}: no such check (the checks: "
              f"{', '.join(BURNIN_CHECKS)})", file=sys.stderr)
        return Exit.USAGE
    every = verdicts(inv, args.results)
    bare = [f"{h}: {every[h].failures[0]}" for h in names if every[h].total == 0]
    if bare:  # nothing to run (a node in service would be drained for nothing)
        print(f"fleet burnin run: {'; '.join(bare)}", file=sys.stderr)
        return Exit.USAGE
    in_service = [h for h in names if inv.nodes[h].state == "active"]
    if in_service and not args.drain:
        print(f"fleet burnin run: {', '.join(in_service)} in service: --drain takes them "
              "out first (their jobs end)", file=sys.stderr)
        return Exit.USAGE
    runner = ctx.runner()
    salt = Salt(runner)
    rows: list[dict[str, Any]] = []
    for h in names:
        runs, missing = remote.plan(inv.raw.profiles[inv.nodes[h].profile_name], only,
                                     inv.nodes[h], inv.raw.site)
        row: dict[str, Any] = {"node": h, "ran": [], "not_run": missing, "error": None,
                               "left_drained": None}
        rows.append(row)
        try:
            if h in in_service:  # the one drain: preemptible work requeued, jobs waited for
                ctx.progress(f"{h}: draining")
                slurm.drain_and_wait(runner, h, DRAIN_REASON,
                                     preemptible=preemptible_partition(inv.raw, inv.nodes[h]),
                                     force=False, timeout=args.drain_timeout, poll=5.0,
                                     say=ctx.progress)
            done = remote.run_node(salt, args.results, h, runs, ctx.progress)
            done += _run_pairs(runner, salt, args, ctx, inv, names, h, only)
        except (ResultError, MasterError, slurm.DrainWaitError) as exc:
            row["error"] = str(exc)
            continue
        row["ran"] = [{"check": r.check, "passed": r.passed, "figures": r.figures,
                       "reason": r.reason} for r in done]
        if h in in_service:
            row["left_drained"] = _back_in_service(runner, inv, args.results, h)
    return _report_run(rows, ctx)


def _back_in_service(runner: Any, inv: Any, root: Path, h: str) -> str | None:
    """A drained node in service resumed only when its verdict passes (the one judge of
    `status` and `finish`: a failed check, an outlier against the baseline and a check
    that could not run or has no result all keep it out); else left drained, the first
    failure (or its progress) its reason, which is returned (None: resumed)."""
    from fleet.master import slurm

    v = verdicts(inv, root)[h]
    if v.status == "passed":
        slurm.resume(runner, h)
        return None
    why = v.failures[0] if v.failures else f"{v.done}/{v.total} checks have a result"
    slurm.drain(runner, h, f"{DRAIN_REASON}: {why}")
    return why


def _run_pairs(runner: Any, salt: Any, args: argparse.Namespace, ctx: Context, inv: Any,
               names: list[str], h: str, only: list[str] | None) -> list[Any]:
    """The node's checks between two nodes (fleet.burnin.pairs), each kept: against its
    first partner, then its second if that failed; no partner is a failed result.
    nccl-pair is one Slurm job of the two (fleet.burnin.pairjob), ib-write-bw two Salt
    calls."""
    from fleet.burnin import pairjob, pairs, remote, results

    node = inv.nodes[h]
    profile = inv.raw.profiles[node.profile_name]
    done = []
    for check in pairs.PAIR_CHECKS:
        if check not in profile.burnin or (only is not None and check not in only):
            continue
        # a node in service under test is drained only in its own turn: not a partner before
        testing = [n for n in names if inv.nodes[n].state != "active"]
        found = pairs.partners(inv, h, testing=testing, in_service=args.partners_in_service,
                               check=check)
        why = pairs.why_none(inv, h, in_service=args.partners_in_service, check=check)
        if check in pairs.JOB_CHECKS:
            result = pairjob.pair_job_check(runner, salt, profile, node, found, why,
                                            remote.unpinned(check, inv.raw.site),
                                            ctx.progress)
        else:
            result = remote.pair_check(salt, profile, node, found, check, why, ctx.progress)
        results.record(args.results, h, result)
        ctx.progress(f"{h}: {check} {'passed' if result.passed else 'FAILED'}")
        done.append(result)
    return done


def _report_run(rows: list[dict[str, Any]], ctx: Context) -> Exit:
    from fleet.master.text import shown

    if ctx.out.json:
        ctx.out.emit({"nodes": rows})
    else:
        for row in rows:
            for r in row["ran"]:
                figs = ", ".join(f"{k} {v:g}" for k, v in sorted(r["figures"].items()))
                verdict = "passed" if r["passed"] else f"FAILED: {shown(r['reason'] or '')}"
                print(f"{row['node']:12} {r['check']:12} {verdict}  {figs}")
            for check in row["not_run"]:
                print(f"{row['node']:12} {check:12} not run: no runner for it yet")
            if row["error"]:
                print(f"{row['node']:12} {'':12} no result: {shown(row['error'])}")
            if row.get("left_drained"):
                print(f"{row['node']:12} {'':12} left drained: {shown(row['left_drained'])}")
    if any(row["error"] for row in rows):
        return Exit.IO
    failed = any(not r["passed"] for row in rows for r in row["ran"])
    return Exit.FAILED if failed or any(row.get("left_drained") for row in rows) else Exit.OK


def _status(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.master.text import shown

    inv = ctx.inventory()
    names = ([h for h, n in inv.nodes.items() if n.state == "burn-in"]
             if args.target is None else ctx.targets()[1])
    every = verdicts(inv, args.results)
    rows = [{"node": h, "state": inv.nodes[h].state, "burnin": every[h].status,
             "done": every[h].done, "total": every[h].total,
             "failures": every[h].failures, "notes": every[h].notes} for h in names]
    if ctx.out.json:
        ctx.out.emit({"nodes": rows})
    else:
        for row in sorted(rows, key=lambda x: x["burnin"] != "failed"):
            print(f"{row['node']:12} {row['state']:12} {row['burnin'].upper():8} "
                  f"{row['done']}/{row['total']}")
            for line in row["failures"] + row["notes"]:
                print(f"    {shown(line)}")
    return Exit.FAILED if any(r["burnin"] == "failed" for r in rows) else Exit.OK


def _record(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.burnin import results

    inv = ctx.inventory()
    if args.node not in inv.nodes:
        print(f"fleet burnin record: no node {args.node}", file=sys.stderr)
        return Exit.USAGE
    if args.result == "-":
        body = sys.stdin.buffer.read(results.MAX_RESULT_BYTES + 1)
    else:
        with Path(args.result).open("rb") as f:
            body = f.read(results.MAX_RESULT_BYTES + 1)
    got = results.parse_lines(body)
    profile = inv.raw.profiles[inv.nodes[args.node].profile_name]
    for result in got:  # all refused or all kept
        if result.check not in profile.burnin:
            print(f"fleet burnin record: {result.check} is no burn-in check of profile "
                  f"{inv.nodes[args.node].profile_name}", file=sys.stderr)
            return Exit.USAGE
    for result in got:
        results.record(args.results, args.node, result)
    if ctx.out.json:
        ctx.out.emit({"node": args.node,
                      "kept": [{"check": r.check, "passed": r.passed} for r in got]})
    return Exit.OK


def _finish(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.burnin.verdict import REASON_PREFIX
    from fleet.discover import accept, edit
    from fleet.inventory.load import read_text
    from fleet.problems import InventoryError, format_text

    if bool(args.nodes) == bool(args.all):
        print("fleet burnin finish: name NODEs or give --all (not both)", file=sys.stderr)
        return Exit.USAGE
    inv = ctx.inventory()
    text = read_text(args.inventory)
    names = args.nodes or [h for h, n in inv.nodes.items() if n.state == "burn-in"]
    every = verdicts(inv, args.results)
    new, outcomes = text, []
    for h in names:
        if h not in inv.nodes or inv.nodes[h].state != "burn-in":
            outcomes.append((h, "refused", "not in burn-in"))
            continue
        v = every[h]
        if v.total == 0:  # nothing ran that could pass or fail it: the profile is to fix
            outcomes.append((h, "refused", v.failures[0]))
            continue
        if v.status == "pending":
            outcomes.append((h, "pending", f"{v.done}/{v.total} checks done"))
            continue
        facts: dict[str, Any] = {"state": "active"} if v.status == "passed" else {
            "state": "maintenance",
            "reason": (REASON_PREFIX + v.failures[0])[:MAX_REASON]}
        new = edit.set_node(new, h, facts)
        outcomes.append((h, facts["state"], facts.get("reason", "passed")))
    try:
        if new != text:
            accept.validate(new, args.inventory)
    except InventoryError as exc:
        print(format_text(exc.problems, wrote_nothing=True), file=sys.stderr)
        return Exit.INVALID
    if new != text and not args.dry_run:
        edit.write_atomic(Path(args.inventory), new)
    if ctx.out.json:
        ctx.out.emit({"outcomes": [{"node": h, "to": t, "why": w} for h, t, w in outcomes]})
    else:
        for h, t, w in outcomes:
            print(f"{h}: {t} ({w})")
    return Exit.FAILED if any(t in ("pending", "refused") for _, t, _ in outcomes) else Exit.OK
