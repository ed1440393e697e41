"""``--drain`` / ``--resume``: what to do with each Slurm node, decided from its health
and its Slurm state alone (pure), then done through ``scontrol`` (fleet.master.slurm).

fleet's own health drain is recognised by its reason: it starts with :data:`PREFIX`.
Any other drain (an operator's, a reinstall's, a rollout's) is never resumed and never
overwritten. Each drain and resume is also journaled under the state dir
(``<state>/<node>/journal.jsonl``, fleet.master.journal), the record of what fleet
did and why."""

from __future__ import annotations

from dataclasses import dataclass

from fleet.health.checks import NodeReport
from fleet.master import slurm
from fleet.master.text import clean

PREFIX = "fleet health:"
REASON_MAX = 400


@dataclass(frozen=True)
class Action:
    node: str
    action: str  # drain | resume | leave
    why: str
    reason: str = ""  # the drain reason given to Slurm

    def as_json(self) -> dict[str, str]:
        d = {"node": self.node, "action": self.action, "why": self.why}
        if self.reason:
            d["reason"] = self.reason
        return d


def drain_reason(problems: list[str]) -> str:
    """``fleet health: <problem>; <problem>``: node-supplied text in it is cleaned
    (printable ASCII, one line) and the whole is cut to what Slurm shows well."""
    return clean(f"{PREFIX} " + "; ".join(problems), REASON_MAX)


def drained(fields: dict[str, str]) -> bool:
    """DRAIN set (draining with jobs, or drained), or DOWN/FAIL set by someone with a
    reason (scontrol's ``State=DOWN Reason=``)."""
    return slurm.drained(fields, also=frozenset({"FAIL"}))


def ours(fields: dict[str, str]) -> bool:
    return drained(fields) and slurm.drained_by(fields, PREFIX)


def decide(report: NodeReport, is_slurm_node: bool, *, drain: bool, resume: bool
           ) -> Action | None:
    """None: nothing to do or say. A node Slurm does not know is left to the slurmd
    check, which already reports it."""
    fields = report.slurm
    if not is_slurm_node or fields is None or not (drain or resume):
        return None
    reason = clean(slurm.reason_text(fields.get("Reason", "")), 160)
    if not report.healthy:
        if not drain:
            return None
        if drained(fields) and not ours(fields):
            return Action(report.node, "leave", f"unhealthy, but drained by someone else "
                                                f"({reason or 'no reason'}): left alone")
        new = drain_reason(report.problems)
        if ours(fields) and slurm.reason_text(fields.get("Reason", "")) == new:
            return Action(report.node, "leave", "unhealthy, already drained by fleet health")
        return Action(report.node, "drain", "unhealthy", new)
    if not resume or not drained(fields):
        return None
    if ours(fields):
        return Action(report.node, "resume", f"healthy again (was: {reason})")
    return Action(report.node, "leave", f"healthy, but drained by someone else "
                                        f"({reason or 'no reason'}): left drained")
