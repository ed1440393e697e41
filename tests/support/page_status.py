"""A FIXTURE status document for the fleet page (tests/page, `make page-screenshot`):
what `fleet status --json` would say of the inventory's nodes (its records' shape,
fleet.status.view on its branch), generated here (no node is asked), with the fields
fleet.page.contract names. One node is in maintenance, one node's minion does not
answer, one has a problem whose text is hostile markup."""

from __future__ import annotations

from typing import Any

from fleet.inventory.model import Inventory
from fleet.page import contract as c

# the nodes the fixture picks out (of the real inventory.yaml)
MAINT, DOWN, BAD = "tbox-003", "tbox-010", "stor-020"
HOSTILE = '<img src=x onerror="document.title=\'owned\'"><script>alert(1)</script>'


def fixture_status(inv: Inventory, maintenance: str, minion_down: str, problem: str,
                   generated: str = "2026-12-02T01:30:00Z") -> dict[str, Any]:
    nodes = []
    for host, node in inv.nodes.items():
        rec: dict[str, Any] = {
            c.NODE: host, c.STATUS: "ok", c.PROBLEMS: [], "unknown": [],
            c.LIFECYCLE: node.state, "power": {"state": "on", "error": None},
            "boot": {"mode": "local", "error": None}, "key": "accepted", c.MINION: "answers",
            "slurm": ({"state": "IDLE", "reason": None} if node.has("slurm.compute")
                      else None),
            "apply": {"verb": "apply", "ts": 1764637200.0, "status": "ok", "ok": True,
                      "summary": "", "ago": "30m ago"},
            "health": {"verb": "health", "ts": 1764637800.0, "status": "ok", "ok": True,
                       "summary": "", "ago": "20m ago"},
            "work": {"running": None, "unfinished": None}, "alerts": [],
        }
        if host == maintenance:
            rec.update({c.LIFECYCLE: "maintenance",
                        "slurm": {"state": "DRAIN", "reason": "fleet-inventory: DIMM B2"}})
        if host == minion_down:
            rec.update({c.STATUS: "problem", c.MINION: "silent",
                        c.PROBLEMS: ["minion does not answer test.ping",
                                     "alert NodeDown (critical): node_exporter down"],
                        "alerts": [{"name": "NodeDown", "severity": "critical",
                                    "summary": "node_exporter down", "since": None}]})
        if host == problem:
            rec.update({c.STATUS: "problem", c.PROBLEMS: [f"slurm DOWN: {HOSTILE}"],
                        "slurm": {"state": "DOWN", "reason": HOSTILE}})
        nodes.append(rec)
    return {"ok": False, "target": "", "generated": generated,
            c.SOURCES: {"power": {"ok": True, "error": None},
                        "alerts": {"ok": False, "error": f"prometheus: {HOSTILE}"}},
            c.SITE_ALERTS: [{"name": "SlurmControllerDown", "severity": "critical",
                             "summary": "slurmctld does not answer"}],
            c.NOTES: [], c.NODES: nodes}
