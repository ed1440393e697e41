"""Before ``fleet power off|cycle|reset``: each Slurm compute node drained through the one
drain (fleet.master.slurm.drain_and_wait), as ``fleet reinstall`` and ``fleet rollout``
drain: its preemptible work requeued, its jobs waited for (``--drain-timeout``) or, with
``--force``, cancelled by id and waited for until Slurm has none. A node is never powered
off, cycled or reset under running jobs.

The node stays drained after the power action, with the reason ``fleet power ACTION``:
``fleet health --resume`` never resumes a drain that is not its own, so the operator
resumes it (``scontrol update NodeName=N State=RESUME``) once it is back, or ``fleet
reinstall N`` does at its end."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from fleet.inventory.compute import preemptible_partition
from fleet.inventory.model import Inventory
from fleet.master import slurm
from fleet.master.runner import CommandError, Runner
from fleet.master.text import clean, last_line

REASON = "fleet power {action}"


def reason(action: str) -> str:
    return REASON.format(action=action)


def drain_first(runner: Runner, inv: Inventory, names: Sequence[str], action: str, *,
                force: bool, timeout: float, poll: float = 5.0, parallel: int = 16,
                say: Callable[[str], None] = lambda msg: None
                ) -> tuple[dict[str, str], dict[str, str]]:
    """The Slurm compute nodes of ``names`` drained, ``parallel`` at once: (what each
    drained node's drain did, one line; why each other one did not get there, one line).
    A signal that ends the verb while they wait (fleet.signals) stops the waits at their
    next poll; the nodes stay drained."""
    stop = threading.Event()

    def one(name: str) -> tuple[str, bool]:
        try:
            done = slurm.drain_and_wait(
                runner, name, reason(action),
                preemptible=preemptible_partition(inv.raw, inv.nodes[name]), force=force,
                timeout=timeout, poll=poll, stopped=stop.is_set, say=say)
        except slurm.DrainWaitError as exc:
            on = f"; job(s) {', '.join(exc.left)} still on it" if exc.left else ""
            return (f"drained, still {exc.state} after {timeout:g}s (--drain-timeout){on}: "
                    "jobs are running; wait, or rerun with --force (which cancels them); "
                    "left drained"), False
        except CommandError as exc:
            res = exc.result
            last = last_line(res.stderr.strip() or res.stdout, 200)
            return (f"cannot drain it: `{' '.join(res.argv)}` exited {res.returncode}"
                    + (f": {last}" if last else "")), False
        except LookupError as exc:
            return f"cannot drain it: {clean(exc)}", False
        said = [f"requeued {', '.join(done.requeued)}"] if done.requeued else []
        said += [f"--force cancelled {', '.join(done.cancelled)}"] if done.cancelled else []
        return "; ".join([*said, f"drained ({done.drained.state})"]), True

    nodes = [n for n in names if inv.nodes[n].has("slurm.compute")]
    if not nodes:
        return {}, {}
    pool = ThreadPoolExecutor(max_workers=max(1, min(parallel, len(nodes))),
                              thread_name_prefix="fleet-power-drain")
    try:
        futures = {n: pool.submit(one, n) for n in nodes}
        outcome = {n: f.result() for n, f in futures.items()}
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
    return ({n: text for n, (text, ok) in outcome.items() if ok},
            {n: text for n, (text, ok) in outcome.items() if not ok})
