"""Why ``fleet power off|cycle|reset`` must not act on a node (without ``--force``): each
rule is a function of the node that returns the reasons, empty when it may go.

- :func:`head_node_refusal`: the provisioning host, the Salt master and the head roles
  (what ``fleet rollout --reboot`` refuses, fleet.rollout.plan.reboot_refused).
- :func:`boot_mode_refusal`: a node whose PXE boot mode is ``install`` (an install is
  armed: a power action would start or wreck it), or cannot be read: the one rule of
  fleet.pxe.powerguard, which ``fleet rollout --reboot`` applies too.
- :func:`running_jobs_refusal`: a Slurm compute node with jobs on it (``squeue``)."""

from __future__ import annotations

from fleet.inventory.head import head_reasons
from fleet.inventory.model import Inventory, Node
from fleet.master import slurm
from fleet.master.runner import CommandError, Runner
from fleet.master.text import clean, last_line, printable
from fleet.pxe.powerguard import BootModeReader, power_refusal

SLURM_TIMEOUT = 30.0


def head_node_refusal(inv: Inventory, node: Node) -> list[str]:
    reasons = head_reasons(inv, node)
    return [f"head node ({', '.join(reasons)}): powering it off takes the site's "
            "provisioning / Salt / Slurm / mkv head down with it"] if reasons else []


def boot_mode_refusal(modes: BootModeReader, node: Node) -> list[str]:
    """fleet.pxe.powerguard's rule: ``install`` or an unreadable mode is a refusal."""
    why = power_refusal(node.hostname, modes, force_flag="--force")
    return [why] if why else []


def running_jobs_refusal(runner: Runner, node: Node) -> list[str]:
    """Jobs Slurm runs on a compute node (running, completing or suspended); a node Slurm
    cannot be asked about is refused too: no answer is not "no jobs"."""
    if not node.has("slurm.compute"):
        return []
    try:
        jobs = slurm.jobs(runner, node.hostname, states="RUNNING,COMPLETING,SUSPENDED",
                          timeout=SLURM_TIMEOUT)
    except CommandError as exc:
        res = exc.result
        last = last_line(res.stderr.strip() or res.stdout, 200)
        return [f"cannot ask Slurm for its jobs: `{' '.join(res.argv)}` exited "
                f"{res.returncode}" + (f": {last}" if last else "")]
    except LookupError as exc:
        return [f"cannot ask Slurm for its jobs: {clean(exc)}"]
    if not jobs:
        return []
    shown = ", ".join(printable(j, 32) for j in jobs[:10])
    more = f" and {len(jobs) - 10} more" if len(jobs) > 10 else ""
    return [f"{len(jobs)} Slurm job(s) on it ({shown}{more}): drain it first "
            f"(`scontrol update NodeName={node.hostname} State=DRAIN Reason=...`)"]


def refusals(inv: Inventory, node: Node, runner: Runner, modes: BootModeReader) -> list[str]:
    """Every reason, cheapest first (Slurm is asked only when the others let it go: a
    head node needs no squeue)."""
    found = head_node_refusal(inv, node) + boot_mode_refusal(modes, node)
    return found or running_jobs_refusal(runner, node)
