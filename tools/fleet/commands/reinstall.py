"""``fleet reinstall NODE [--resume | --abort]``: the command line of the reinstall flow."""

from __future__ import annotations

import argparse
import functools
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fleet.cliparts import (
    Parents,
    add_command,
    add_node_flow,
    add_salt_config,
    add_slurm_command,
    bmc_options,
    boot_mode_store,
)
from fleet.context import Context
from fleet.exitcodes import Exit, for_signal
from fleet.master import statedir
from fleet.output import node_entry

if TYPE_CHECKING:
    from fleet.inventory.model import Inventory
    from fleet.reinstall.context import Context as FlowContext
    from fleet.reinstall.flow import Interrupts, Report
    from fleet.reinstall.parallel import NodeInterrupts, NodeResult, Run


DESCRIPTION = """
Reinstall NODE: preflight, drain in Slurm, rotate its minion key, power it off through its
BMC (confirmed off), arm a one-shot PXE install, power it on (PXE once), wait for the
installer's callback, converge, check, resume. Journal and lock under --state-dir/NODE.
Several nodes (a range, list or glob): their reinstalls in parallel (--parallel). See
docs/operations.md.
"""
EPILOG = """
exit codes: 0 done (or aborted), 1 invalid inventory, 2 usage, 4 I/O, 5 a step failed (node
left drained, boot mode local; see the journal), 6 busy (another run holds the node, or an
unfinished run needs --resume or --abort), 130 / 143 SIGINT / SIGTERM ended the run (128 +
the signal: the step that ran is journaled failed 'interrupted by the operator', the node is
left as after a failure; a second signal does not cut that short)
"""


def register(sub: Any, parents: Parents) -> None:
    from fleet.reinstall.bootguard import GRACE_SHARE

    p = add_command(sub, parents, "reinstall", DESCRIPTION, EPILOG)
    p.add_argument("node", help="the node's hostname in the inventory, or several: "
                                "comma-separated names, ranges (tbox-[001-010], the "
                                "inventory's syntax) and globs, reinstalled in parallel")
    add_node_flow(p, "reinstall", statedir.REINSTALL,
                  resume="continue the node's unfinished reinstall",
                  abort="end the unfinished reinstall: boot mode local, token revoked; "
                        "report what is left (drained, key state)",
                  pxe="sets", drain=3600.0, converge=1800.0, health=300.0)
    p.add_argument("--timeout", type=float, default=3600.0, metavar="S",
                   help="seconds from power-on to the installer's callback (default 3600)")
    p.add_argument("--power-timeout", type=float, default=120.0, metavar="S",
                   help="seconds for the BMC to report the node off after the power-off "
                        "(default 120)")
    p.add_argument("--boot-grace", type=float, metavar="S",
                   help="seconds after the installer's callback without an answer from "
                        "the minion before converge power-cycles the node once through "
                        "its BMC (a reset, booting from its disk; only when the BMC says "
                        f"it is on) (default {GRACE_SHARE:g} x --converge-timeout; 0: "
                        "never)")
    add_salt_config(p)
    p.add_argument("--callback", metavar="HOST:PORT",
                   help="where the installer's key/callback endpoint listens (default "
                        "<site.salt.master_address>:<site.salt.reinstall_port>, 8470 unless "
                        "set: the rendered "
                        "late-commands call that port on the master; 'none' when one runs "
                        "separately)")
    add_slurm_command(p)
    p.add_argument("--reason", default="fleet reinstall", help="Slurm drain reason")
    p.add_argument("--parallel", type=int, metavar="N",
                   help="with several nodes: at most N reinstalls at once (default and "
                        "most: what the provisioning host's link carries, see "
                        "docs/operations.md); each node has its own journal, lock and "
                        "token, one failing does not stop the others; a summary at the "
                        "end, exit 5 when any node failed")


def _context(args: argparse.Namespace, ctx: Context, inv: Inventory, name: str,
             say: Callable[[str], None]) -> FlowContext:
    """One node's Context from the command line (each node of a parallel run has its own:
    its runner, BMC client and state directory)."""
    from fleet.bmc.connect import client_for
    from fleet.master.keys import MinionKeys
    from fleet.master.runner import pki_dir
    from fleet.reinstall.context import Context as FlowContextClass
    from fleet.reinstall.context import Options

    node = inv.nodes[name]
    runner = ctx.runner()
    bmc_opts = bmc_options(args, name)
    return FlowContextClass(
        inventory=inv, node=node, state_root=args.state_dir, runner=runner,
        boot=boot_mode_store(args, inv), bmc=lambda: client_for(node, bmc_opts),
        keys=MinionKeys(runner, pki_dir(args.salt_config)),
        options=Options(force=args.force, install_timeout=args.timeout,
                        power_timeout=args.power_timeout,
                        drain_timeout=args.drain_timeout,
                        converge_timeout=args.converge_timeout,
                        boot_grace=args.boot_grace,
                        health_timeout=args.health_timeout, reason=args.reason),
        say=say)


def _bind(args: argparse.Namespace, inv: Inventory) -> tuple[str, int] | None:
    """Where the installer's endpoint listens: the master's provisioning address, where the
    installers call, only (default); None for --callback none."""
    from fleet.reinstall.server import default_bind

    if args.callback == "none":
        return None
    if args.callback:
        host, _, port = args.callback.rpartition(":")
        return host, int(port)
    return default_bind(inv)


def _reinstall_many(args: argparse.Namespace, ctx: Context, inv: Inventory,
                    names: list[str]) -> int:
    """Several nodes: fleet.reinstall.parallel runs their flows, one endpoint serves them."""
    from contextlib import nullcontext

    from fleet.reinstall import parallel
    from fleet.reinstall.flow import FlowError, endpoint
    from fleet.reinstall.server import node_addresses

    quiet = args.quiet
    lock = threading.Lock()

    def say(msg: str) -> None:
        if not quiet:
            with lock:
                print(msg, file=sys.stderr, flush=True)

    bound = parallel.link_bound(inv, args.pxe_root)
    asked = args.parallel if args.parallel is not None else bound.limit
    used = min(asked, bound.limit, len(names))
    if asked > bound.limit:
        print(f"fleet reinstall: --parallel {asked} is above what the provisioning link "
              f"carries ({bound.limit}: {bound.why}); running at most {bound.limit} at "
              "once", file=sys.stderr, flush=True)
    say(f"fleet reinstall: {len(names)} nodes, at most {used} at once ({bound.why}: "
        f"{bound.limit})")
    args.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    bind = _bind(args, inv)
    hub = parallel.SignalHub(lambda msg: print(f"fleet reinstall: {msg}", file=sys.stderr,
                                               flush=True)).install()
    try:
        serving: Any = nullcontext()
        if bind is not None and not args.abort:
            first = _context(args, ctx, inv, names[0], say)
            _url, serving = endpoint(first, bind, node_addresses(inv))
        with serving:
            run = parallel.run_all(names, functools.partial(_node_job, args, ctx, inv), used, hub,
                                   say)
    except FlowError as exc:  # the endpoint's port is taken by something else
        print(f"fleet reinstall: {exc}", file=sys.stderr)
        return Exit.USAGE
    finally:
        hub.restore()
    run.extra["bound"] = {"limit": bound.limit, "why": bound.why, "asked": asked}
    _print_many(args, ctx, run)
    return run.exit


def _print_many(args: argparse.Namespace, ctx: Context, run: Run) -> None:
    from fleet.reinstall import parallel

    if args.json:
        doc = parallel.as_json(run)
        doc["nodes"] = [_node(n) for n in doc["nodes"]]
        ctx.out.emit(doc)
    elif not args.quiet:
        for line in parallel.summary(run):
            print(line)
        for r in run.results:
            for w in r.report.warnings if r.report else []:
                print(f"warning: {r.node}: {w}")


def _node_job(args: argparse.Namespace, ctx: Context, inv: Inventory, name: str,
              interrupts: NodeInterrupts) -> NodeResult:
    """One node's flow in a parallel run, its outcome as the exit code a run of it alone
    would have."""
    from fleet.master.lock import BusyError
    from fleet.reinstall.flow import Flow, FlowError
    from fleet.reinstall.parallel import NodeResult

    # no endpoint of its own: the run's one serves every node
    flow = Flow(_context(args, ctx, inv, name, interrupts.say), callback_bind=None,
                interrupts=interrupts)
    try:
        report = flow.abort() if args.abort else flow.run(resume=args.resume)
    except BusyError as exc:
        return NodeResult(name, "busy", Exit.BUSY, message=str(exc))
    except FlowError as exc:
        return NodeResult(name, "refused", Exit.BUSY if "unfinished" in str(exc)
                          else Exit.USAGE, message=str(exc))
    except OSError as exc:
        return NodeResult(name, "error", Exit.IO, message=str(exc))
    unsafe = report.left.get("boot_mode", "").startswith("UNKNOWN")
    code = for_signal(signal.Signals[report.signal]) if report.signal else \
        Exit.FAILED if report.outcome == "failed" or unsafe else Exit.OK
    why = f"boot mode {report.left['boot_mode']}" if unsafe else report.message
    return NodeResult(name, report.outcome, code, report=report, message=why)


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    """SIGINT and SIGTERM are handled here, whatever the process inherited (fleet.reinstall.
    flow.Interrupts): the flow journals the step they end and leaves the node safe."""
    from fleet.reinstall.flow import Interrupted, Interrupts

    say = (lambda msg: None) if args.quiet else \
        (lambda msg: print(f"fleet reinstall: {msg}", file=sys.stderr, flush=True))
    interrupts = Interrupts(say).install()
    try:
        return Exit(_cmd_reinstall(args, ctx, interrupts))
    except Interrupted as exc:  # before the flow began (or after it ended): nothing to undo
        print(f"fleet reinstall: interrupted ({signal.Signals(exc.signum).name}) outside "
              "the run's steps; the journal says where the node is", file=sys.stderr)
        return for_signal(exc.signum)
    finally:
        interrupts.restore()


def _cmd_reinstall(args: argparse.Namespace, ctx: Context, interrupts: Interrupts) -> int:
    from fleet.master.lock import BusyError
    from fleet.reinstall.flow import Flow, FlowError

    inv = ctx.inventory()
    if args.parallel is not None and args.parallel < 1:
        print("fleet reinstall: --parallel must be at least 1", file=sys.stderr)
        return Exit.USAGE
    names = _nodes(args, inv)
    if isinstance(names, int):
        return names
    if len(names) > 1:
        interrupts.restore()  # the many-node run has its own handlers
        return _reinstall_many(args, ctx, inv, names)
    say = (lambda msg: None) if args.quiet else \
        (lambda msg: print(msg, file=sys.stderr, flush=True))
    node_ctx = _context(args, ctx, inv, names[0], say)
    bind = _bind(args, inv)
    args.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    flow = Flow(node_ctx, callback_bind=bind, interrupts=interrupts)
    try:
        report = flow.abort() if args.abort else flow.run(resume=args.resume)
    except BusyError as exc:
        print(f"fleet reinstall: {exc}", file=sys.stderr)
        return Exit.BUSY
    except FlowError as exc:
        print(f"fleet reinstall: {exc}", file=sys.stderr)
        return Exit.BUSY if "unfinished" in str(exc) else Exit.USAGE
    _print_report(args, ctx, report)
    if report.signal:
        return for_signal(signal.Signals[report.signal])
    if interrupts.received is not None:
        print(f"fleet reinstall: {interrupts.name} came as the run ended; it was not "
              "interrupted", file=sys.stderr)
    unsafe = report.left.get("boot_mode", "").startswith("UNKNOWN")
    return Exit.FAILED if report.outcome == "failed" or unsafe else Exit.OK


def _nodes(args: argparse.Namespace, inv: Inventory) -> list[str] | int:
    """The nodes NODE names (a name, or a list, range or glob), or the exit code of a NODE
    that names none."""
    if args.node in inv.nodes:
        return [args.node]
    if any(c in args.node for c in ",[*?"):
        from fleet.inventory.target import TargetError, resolve

        try:
            return resolve(args.node, inv.nodes)
        except TargetError as exc:
            print(f"fleet reinstall: {exc}", file=sys.stderr)
            return Exit.USAGE
    print(f"fleet reinstall: no node {args.node!r} in {args.inventory}", file=sys.stderr)
    return Exit.USAGE


def _node(doc: dict[str, Any]) -> dict[str, Any]:
    """One node's reinstall in the common shape: its outcome, the seconds of its steps,
    the message of a run that did not end done as its problem."""
    seconds = doc.get("seconds")
    if seconds is None:
        seconds = sum(float(s.get("seconds") or 0) for s in doc.get("steps", []))
    bad = doc.get("outcome") not in ("done", "aborted")
    return node_entry(doc["node"], doc.get("outcome", ""), seconds,
                      [doc["message"]] if bad and doc.get("message") else [], doc)


def _print_report(args: argparse.Namespace, ctx: Context, report: Report) -> None:
    if args.json:
        doc = report.as_json()
        ctx.out.emit({**doc, "nodes": [_node(doc)]})
    elif not args.quiet:
        total = sum(s.seconds for s in report.steps)
        print(f"{report.node}: {report.outcome} ({report.run_id}, {total:.1f}s in steps)")
        for w in report.warnings:
            print(f"warning: {w}")
        if report.message:
            print(report.message)
        for k, v in report.left.items():
            print(f"  {k}: {v}")
