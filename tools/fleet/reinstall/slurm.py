"""Drain and resume a node in Slurm through ``scontrol`` and ``sinfo`` (research notes §3:
DRAIN survives re-registration; only an explicit RESUME returns the node)."""

from __future__ import annotations

from fleet.reinstall.commands import Runner

# Base states (sinfo %T, flags such as "*" stripped) in which no job runs on the node.
IDLE_ENOUGH = frozenset({"drained", "down", "fail"})
REASON_MAX = 400


def drain(runner: Runner, node: str, reason: str) -> None:
    """The reason is one argument (``commands.through`` quotes it for ssh); text a node
    supplied in it (health output) loses its control characters and is cut short."""
    clean = " ".join("".join(c if c.isprintable() else " " for c in reason).split())
    runner.run(["scontrol", "update", f"NodeName={node}", "State=DRAIN",
                f"Reason={clean[:REASON_MAX]}"]).check()


def resume(runner: Runner, node: str) -> None:
    runner.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"]).check()


def state(runner: Runner, node: str) -> str:
    """The node's state as ``sinfo -h -N -n NODE -o %T`` prints it, e.g. ``draining``."""
    out = runner.run(["sinfo", "-h", "-N", "-n", node, "-o", "%T"]).check().stdout
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    if not lines:
        raise LookupError(f"sinfo does not know node {node}")
    return lines[0]


def base_state(sinfo_state: str) -> str:
    """``drained*`` -> ``drained``: drop sinfo's flag suffixes (not responding, powered...)."""
    return sinfo_state.rstrip("*~#!%$@^-+")


def no_jobs_can_run(sinfo_state: str) -> bool:
    return base_state(sinfo_state) in IDLE_ENOUGH
