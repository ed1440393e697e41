"""A FIXTURE status document for the fleet page (tests/page, `make page-screenshot`):
what `fleet status --json` would say of the inventory's nodes, generated here (no node is
asked), with its fields named by fleet.page.contract. One node is in maintenance, one
node's minion does not answer, one has a problem whose text is hostile markup."""

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
            c.NODE: host, c.STATUS: "ok", c.PROBLEMS: [], c.LIFECYCLE: node.state,
            "power": "on", "boot_mode": "local", "key": "accepted", c.MINION: True,
            "slurm": {"state": "idle", "reason": None} if node.has("slurm.compute") else None,
            "last_apply": {"result": "ok", "at": "2026-12-02T01:00:00Z"},
            "last_health": "ok", "in_progress": None, "alerts": [],
        }
        if host == maintenance:
            rec.update({c.LIFECYCLE: "maintenance", c.STATUS: "problem",
                        "slurm": {"state": "drained", "reason": "fleet-inventory: DIMM B2"},
                        c.PROBLEMS: ["drained: fleet-inventory: DIMM B2"]})
        if host == minion_down:
            rec.update({c.STATUS: "problem", c.MINION: False, "last_health": None,
                        c.PROBLEMS: ["minion did not answer test.ping within 10 s"],
                        "alerts": ["NodeDown (critical)"]})
        if host == problem:
            rec.update({c.STATUS: "problem", c.PROBLEMS: [HOSTILE],
                        "slurm": {"state": "down", "reason": HOSTILE}})
        nodes.append(rec)
    return {"ok": False, "generated": generated, c.NODES: nodes}
