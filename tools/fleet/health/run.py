"""One health run: ask (fleet.health.checks), judge, then drain/resume as decided
(fleet.health.decide), each action journaled. Also what ``fleet rollout`` calls for
its health gate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleet.health import checks, decide
from fleet.health.checks import PROBLEM, SKIPPED, WARNING, NodeReport
from fleet.inventory.model import Inventory
from fleet.master import slurm
from fleet.master.journal import Journal
from fleet.master.runner import CommandError, Runner
from fleet.master.salt import Salt
from fleet.master.text import clean


@dataclass
class Outcome:
    reports: list[NodeReport]
    actions: list[decide.Action] = field(default_factory=list)
    failed_actions: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self, target: str, wall: float) -> dict[str, Any]:
        by_node = {a.node: a for a in self.actions}
        return {
            "ok": all(r.healthy for r in self.reports) and not self.failed_actions,
            "target": target, "wall_s": round(wall, 2),
            "healthy": sum(1 for r in self.reports if r.healthy),
            "unhealthy": sum(1 for r in self.reports if not r.healthy),
            "nodes": [{"node": r.node, "healthy": r.healthy,
                       "slurm": None if r.slurm is None else {
                           "state": r.slurm.get("State", ""),
                           "reason": clean(r.slurm.get("Reason", ""), 400)},
                       "action": by_node[r.node].as_json() if r.node in by_node else None,
                       "checks": [f.as_json() for f in r.findings]} for r in self.reports],
            "errors": self.failed_actions,
        }

    def table(self, wall: float) -> str:
        """Unhealthy nodes first, each problem on its own line; then the healthy ones."""
        by_node = {a.node: a for a in self.actions}
        rows = sorted(self.reports, key=lambda r: r.healthy)
        width = max([len(r.node) for r in rows] + [4])
        lines = [f"{'node':<{width}}  {'health':<9}  {'slurm':<16}  detail"]
        for r in rows:
            state = r.slurm.get("State", "") if r.slurm else "-"
            skipped = [f.check for f in r.findings if f.status == SKIPPED]
            warned = [f.detail for f in r.findings if f.status == WARNING]
            ok = sum(1 for f in r.findings if f.status == "ok")
            details = r.problems or [f"{ok} checks ok"
                                     + (f"; skipped: {', '.join(skipped)} (fleet:hardware "
                                        "false)" if skipped else "")]
            details += [f"warning: {w}" for w in warned]
            if r.node in by_node:
                a = by_node[r.node]
                details.append(f"{a.action}: {a.why}")
            lines.append(f"{r.node:<{width}}  {'healthy' if r.healthy else 'UNHEALTHY':<9}  "
                         f"{clean(state, 16):<16}  {details[0]}")
            lines += [f"{'':<{width}}  {'':<9}  {'':<16}  {d}" for d in details[1:]]
        bad = sum(1 for r in self.reports if not r.healthy)
        lines += ["", f"{len(self.reports)} node(s): {len(self.reports) - bad} healthy, "
                      f"{bad} unhealthy; {wall:.1f}s wall"]
        return "\n".join(lines)


def check(inv: Inventory, names: list[str], runner: Runner,
          progress: Callable[[str], None], *, salt_timeout: float = 60.0) -> list[NodeReport]:
    nodes = [inv.nodes[n] for n in names]
    salt = Salt(runner, salt_timeout)
    expected = checks.expected_units(salt, nodes, progress)
    calls = checks.plan(inv, nodes, salt, expected)
    wants_slurm = any(n.has("slurm.compute") for n in nodes)
    answers = checks.ask(calls, checks.scontrol_reader(runner) if wants_slurm else None,
                         progress)
    answers.expected = expected
    return checks.evaluate(inv, nodes, answers)


def gate(inv: Inventory, names: list[str], runner: Runner, progress: Callable[[str], None],
         *, drain: bool, resume: bool, state_dir: Path, salt_timeout: float = 60.0
         ) -> Outcome:
    reports = check(inv, names, runner, progress, salt_timeout=salt_timeout)
    out = Outcome(reports)
    for r in reports:
        action = decide.decide(r, inv.nodes[r.node].has("slurm.compute"), drain=drain,
                               resume=resume)
        if action is None:
            continue
        out.actions.append(action)
        if action.action == "leave":
            continue
        try:
            if action.action == "drain":
                slurm.drain(runner, r.node, action.reason)
            else:
                slurm.resume(runner, r.node)
        except CommandError as exc:
            out.failed_actions.append(f"{r.node}: {action.action} failed: {exc}")
            continue
        progress(f"{r.node}: {action.action}: {action.why}")
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        Journal(state_dir / r.node).append(
            action.action, why=action.why, reason=action.reason,
            problems=r.problems if action.action == "drain" else [])
    if any(f.status == PROBLEM for r in reports for f in r.findings):
        progress(f"{sum(1 for r in reports if not r.healthy)} unhealthy node(s)")
    return out
