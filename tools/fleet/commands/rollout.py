"""``fleet rollout [TARGET] [--states S,...] [--wave K] [--reboot [--ignore-boot-mode]]
[--resume | --abort]``."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleet.cliparts import (
    Parents,
    add_command,
    add_ignore_boot_mode,
    add_node_flow,
    add_salt_options,
    bmc_options,
    boot_mode_store,
)
from fleet.context import Context
from fleet.exitcodes import Exit, for_signal
from fleet.master import statedir
from fleet.output import node_entry

if TYPE_CHECKING:
    from fleet.inventory.model import Inventory
    from fleet.master.runner import Runner
    from fleet.rollout.flow import Parts


DESCRIPTION = """
Apply the highstate (or --states) to the nodes TARGET names, wave by wave: at most K nodes
of each Slurm partition at once, each drained (waiting for its jobs unless --force),
applied, rebooted through its BMC with --reboot, health-checked (fleet health's checks) and
resumed. --reboot refuses a node whose PXE boot mode is install (the boot would reinstall
it, wiping its disk) or cannot be read, naming it: before anything starts, and again
just before its power cycle. The first failed node stops the rollout after its wave, left
drained with the reason. Journal and lock under --state-dir. See docs/operations.md.
"""
EPILOG = """
exit codes: 0 done (or aborted), 1 invalid inventory, 2 usage (or --reboot refused: a head
node, a node in PXE install mode or whose mode cannot be read), 4 I/O, 5 a node failed (left
drained; fix it, then --resume; a node a reinstall is working on fails at its lock,
untouched), 6 busy (another rollout runs) or an unfinished rollout
needs --resume or --abort; 130 / 143 interrupted (the nodes in flight are left drained,
--resume)
"""


def register(sub: Any, parents: Parents) -> None:
    p = add_command(sub, parents, "rollout", DESCRIPTION, EPILOG, target="'tbox-*'")
    p.add_argument("--states", metavar="S,...",
                   help="apply these states (state.apply S,...) instead of the highstate")
    p.add_argument("--wave", type=int, default=1, metavar="K",
                   help="at most K nodes of each partition out at once (default 1)")
    p.add_argument("--reboot", action="store_true",
                   help="power-cycle each node through its BMC after the apply; refused "
                        "for a node whose PXE boot mode is install or cannot be read")
    add_ignore_boot_mode(p, "with --reboot: ")
    add_node_flow(p, "rollout", statedir.ROLLOUT,
                  resume="continue the unfinished rollout (its own target and options)",
                  abort="end the unfinished rollout; the nodes it drained stay drained",
                  pxe="--reboot reads", drain=3600.0, apply=1800.0, boot=900.0, health=300.0)
    p.add_argument("--reinstall-state-dir", type=Path, metavar="DIR",
                   default=statedir.REINSTALL.path(),
                   help="fleet reinstall's state dir, whose per-node locks the rollout "
                        "takes so the two never work on one node at once (default "
                        f"${statedir.REINSTALL.env} or {statedir.REINSTALL.default})")
    add_salt_options(p)


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.master.lock import BusyError
    from fleet.rollout.flow import Options, Rollout, RolloutError
    from fleet.signals import SignalCatcher

    inv, names = ctx.targets()
    if _refused(args, inv, names):
        return Exit.USAGE
    quiet = args.quiet

    def say(msg: str) -> None:
        if not quiet:
            print(f"fleet rollout: {msg}", file=sys.stderr, flush=True)

    opts = Options(target=args.target,
                   states=tuple(s for s in (args.states or "").split(",") if s),
                   wave=args.wave, reboot=args.reboot, force=args.force,
                   ignore_boot_mode=args.ignore_boot_mode,
                   drain_timeout=args.drain_timeout, apply_timeout=args.apply_timeout,
                   boot_timeout=args.boot_timeout, health_timeout=args.health_timeout)
    args.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    rollout = Rollout(inv, _parts(args, inv, ctx.runner()), args.state_dir,
                      args.reinstall_state_dir, say)

    def on_signal(signum: int) -> None:
        say(f"{signal.Signals(signum).name}: stopping after the steps in flight "
            "(nodes left drained; --resume continues)")
        rollout.interrupt()

    signals = SignalCatcher(say, on_signal, again="the steps in flight are finishing")
    signals.install()
    try:
        report = rollout.abort() if args.abort else \
            rollout.start(names, opts, resume=args.resume)
    except BusyError:
        print(f"fleet: another `fleet rollout` is running (lock {args.state_dir / 'lock'})",
              file=sys.stderr)
        return Exit.BUSY
    except RolloutError as exc:
        print(f"fleet: {exc}", file=sys.stderr)
        return Exit.BUSY if "unfinished" in str(exc) else Exit.USAGE
    finally:
        signals.restore()
    if args.json:
        ctx.out.emit(as_json(report))
    elif not quiet:
        print(format_table(report))
    if signals.received is not None:
        return for_signal(signals.received)
    return Exit.FAILED if report.outcome == "failed" else Exit.OK


def _refused(args: argparse.Namespace, inv: Inventory, names: list[str]) -> bool:
    """--wave below 1, or --reboot of nodes that must not be power-cycled (said why)."""
    from fleet.pxe.powerguard import power_refusal
    from fleet.rollout import plan

    if args.wave < 1:
        print("fleet: --wave must be at least 1", file=sys.stderr)
        return True
    if args.ignore_boot_mode and not args.reboot:
        print("fleet: --ignore-boot-mode goes with --reboot", file=sys.stderr)
        return True
    if not args.reboot:
        return False
    if bad := plan.reboot_refused(inv, [inv.nodes[n] for n in names]):
        print(f"fleet: --reboot refused for {', '.join(bad)}: leave them out of TARGET",
              file=sys.stderr)
        return True
    if args.ignore_boot_mode:
        return False
    reader = boot_mode_store(args, inv)
    refusals = [why for n in names if (why := power_refusal(n, reader)) is not None]
    for why in refusals:
        print(f"fleet: --reboot refused for {why}", file=sys.stderr)
    return bool(refusals)


def _parts(args: argparse.Namespace, inv: Inventory, runner: Runner) -> Parts:
    """Salt, the BMCs and the health gate as the command line sets them."""
    from fleet.bmc.connect import client_for
    from fleet.health.run import check
    from fleet.master.salt import Salt
    from fleet.rollout.flow import Parts
    from fleet.rollout.steps import BmcReboot, SaltApply


    def health(node: str) -> list[str]:
        return check(inv, [node], runner, lambda _m: None,
                     salt_timeout=args.salt_timeout)[0].problems

    salt = Salt(runner)
    return Parts(runner=runner, apply=SaltApply(salt),
                 reboot=BmcReboot(salt,
                                  lambda n: client_for(inv.nodes[n], bmc_options(args, n))),
                 health=health, boot_mode=boot_mode_store(args, inv))


def as_json(report: Any) -> dict[str, Any]:
    """The rollout's document, each node in the common shape: its outcome, the seconds of
    its steps, the failed step's message as its problem."""
    doc: dict[str, Any] = report.as_json()
    doc["nodes"] = [node_entry(n.node, n.outcome, sum(n.steps.values()),
                               [n.message] if n.outcome == "failed" and n.message else [],
                               n.as_json()) for n in report.nodes.values()]
    return doc


def format_table(report: Any) -> str:
    from fleet.rollout.flow import STEPS

    lines = [f"rollout {report.run_id}: {report.outcome}"
             + (f" ({report.message})" if report.message else "")]
    if report.nodes:
        width = max(len(n) for n in report.nodes)
        lines.append(f"{'node':<{width}}  wave  {'outcome':<7}  "
                     + "  ".join(f"{s:>7}" for s in STEPS))
        wave_of = {n: i for i, w in enumerate(report.waves, 1) for n in w}
        for n, r in report.nodes.items():
            cells = [f"{r.steps[s]:7.1f}" if s in r.steps else f"{'-':>7}" for s in STEPS]
            lines.append(f"{n:<{width}}  {wave_of.get(n, 0):>4}  {r.outcome:<7}  "
                         + "  ".join(cells))
    for i, s in enumerate(report.wave_seconds, 1):
        lines.append(f"wave {i}: {s:.1f}s")
    for n, what in report.left.items():
        lines.append(f"left drained: {n}: {what}")
    return "\n".join(lines)
