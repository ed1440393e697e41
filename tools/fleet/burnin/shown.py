"""A node's burn-in as ``fleet node show`` gives it: every check of its profile with its
latest result (pass or fail, the figures, when, how long) or none yet, and the verdict
against the profile's baseline (fleet.burnin.verdict). A result came from the node:
every text of it is shown escaped."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fleet.burnin import results
from fleet.burnin.verdict import for_inventory
from fleet.inventory.model import Inventory
from fleet.master.text import shown, stamp


def records(inv: Inventory, names: Sequence[str], root: Path) -> dict[str, dict[str, Any]]:
    """node -> ``{"verdict", "done", "total", "checks": [...], "failures", "notes"}``, or
    ``{"error": why}`` when the results could not be read."""
    try:
        got = {h: results.load(root, h) for h in inv.nodes}
    except (OSError, ValueError) as exc:
        return {h: {"error": shown(f"{root}: {exc}")} for h in names}
    verdicts = for_inventory(inv, got)
    out = {}
    for h in names:
        tests = inv.raw.profiles[inv.nodes[h].profile_name].burnin
        v = verdicts[h]
        checks = []
        for check, test in tests.items():
            r = got[h].get(check)
            checks.append({"check": check, "seconds_planned": test.seconds} | (
                {"result": None} if r is None else {
                    "result": "passed" if r.passed else "failed",
                    "figures": dict(r.figures), "reason": shown(r.reason or "") or None,
                    "started": r.started, "seconds": r.seconds}))
        out[h] = {"verdict": v.status, "done": v.done, "total": v.total, "checks": checks,
                  "failures": [shown(f) for f in v.failures],
                  "notes": [shown(n) for n in v.notes]}
    return out


def lines(rec: dict[str, Any]) -> list[str]:
    """The record as ``fleet node show``'s lines."""
    if "error" in rec:
        return [f"  burn-in    results unreadable: {rec['error']}"]
    if not rec["checks"]:
        return []  # its profile has no burn-in
    out = [f"  burn-in    {rec['verdict']}, {rec['done']}/{rec['total']} checks ran"]
    for c in rec["checks"]:
        if c["result"] is None:
            out.append(f"    {c['check']:<14} not run yet")
            continue
        figs = ", ".join(f"{k} {v:g}" for k, v in sorted(c["figures"].items()))
        why = f" ({c['reason']})" if c["reason"] else ""
        out.append(f"    {c['check']:<14} {c['result']}{why}, {stamp(c['started'])}, "
                   f"{c['seconds']:g}s" + (f": {figs}" if figs else ""))
    out += [f"    ! {f}" for f in rec["failures"]]
    out += [f"    . {n}" for n in rec["notes"]]
    return out
