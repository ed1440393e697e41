"""Why ``fleet power off|cycle|reset`` must not act on a node (without ``--force``): each
rule is a function of the node that returns the reasons, empty when it may go.

- :func:`head_node_refusal`: the provisioning host, the Salt master and the head roles
  (what ``fleet rollout --reboot`` refuses, fleet.rollout.plan.reboot_refused).
- :func:`boot_mode_refusal`: a node whose PXE boot mode is ``install`` (an install is
  armed: a power action would start or wreck it), or cannot be read here.
- :func:`running_jobs_refusal`: a Slurm compute node with jobs on it (``squeue``).

MERGE NOTE: another change writes one shared "refuse a power action on a node whose boot
mode is install or unknown" for ``fleet rollout --reboot``; :func:`boot_mode_refusal`
should become that one function when both are merged."""

from __future__ import annotations

from pathlib import Path

from fleet.inventory.model import Inventory, Node
from fleet.pxe import state as pxe_state
from fleet.reinstall.commands import Runner
from fleet.rollout.plan import reboot_refused

SLURM_TIMEOUT = 30.0


def head_node_refusal(inv: Inventory, node: Node) -> list[str]:
    said = reboot_refused(inv, [node])
    if not said and node.hostname == inv.raw.site.provisioning_host:
        said = [f"{node.hostname} (provisioning host)"]
    return [f"head node {s.split(' ', 1)[1]}: powering it off takes the site's "
            "provisioning / Salt / Slurm / mkv head down with it" for s in said]


def boot_mode_refusal(inv: Inventory, node: Node, state_dir: Path | None = None) -> list[str]:
    """The node's boot mode from the PXE state directory (``site.pxe_state`` unless
    ``state_dir``): ``install`` or unknown is a refusal."""
    sd = state_dir if state_dir is not None else pxe_state.state_dir(inv)
    if not sd.is_dir():
        return [f"boot mode unknown: the PXE state directory {sd} is not on this host "
                "(run on the provisioning host, or give --pxe-state DIR)"]
    try:
        mode = pxe_state.get_mode(sd, pxe_state.target(inv, node.hostname))
    except (pxe_state.StateError, OSError) as exc:
        return [f"boot mode unknown: {exc}"]
    if mode == "install":
        return [f"boot mode is install ({sd}): an install is armed; `fleet reinstall "
                f"{node.hostname} --abort` or `fleet pxe set {node.hostname} local` first"]
    return []


def running_jobs_refusal(runner: Runner, node: Node) -> list[str]:
    """Jobs Slurm runs on a compute node (running, completing or suspended); a node Slurm
    cannot be asked about is refused too: no answer is not "no jobs"."""
    if not node.has("slurm.compute"):
        return []
    res = runner.run(["squeue", "-h", "-w", node.hostname, "-t", "RUNNING,COMPLETING,SUSPENDED",
                      "-o", "%i"], timeout=SLURM_TIMEOUT)
    if res.returncode != 0:
        last = (res.stderr.strip() or res.stdout.strip()).splitlines()
        return [f"cannot ask Slurm for its jobs: `{' '.join(res.argv)}` exited "
                f"{res.returncode}" + (f": {last[-1][:200]}" if last else "")]
    jobs = [j.strip() for j in res.stdout.split() if j.strip()]
    if not jobs:
        return []
    shown = ", ".join("".join(c for c in j if c.isprintable())[:32] for j in jobs[:10])
    more = f" and {len(jobs) - 10} more" if len(jobs) > 10 else ""
    return [f"{len(jobs)} Slurm job(s) on it ({shown}{more}): drain it first "
            f"(`scontrol update NodeName={node.hostname} State=DRAIN Reason=...`)"]


def refusals(inv: Inventory, node: Node, runner: Runner,
             pxe_state_dir: Path | None = None) -> list[str]:
    """Every reason, cheapest first (Slurm is asked only when the others let it go: a
    head node needs no squeue)."""
    found = head_node_refusal(inv, node) + boot_mode_refusal(inv, node, pxe_state_dir)
    return found or running_jobs_refusal(runner, node)
