"""The master's minion keys (``salt-key -L``'s lists) against the inventory's nodes:
stray, retired, missing and planned (``fleet keys check``, fleet.commands.keys)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fleet.master.keys import KEY_LISTS

if TYPE_CHECKING:
    from fleet.inventory.model import Inventory

@dataclass
class KeyReport:
    accepted: list[str]
    stray: list[str]  # accepted, but no such node in the inventory
    missing: dict[str, str]  # node -> "no key" | "pending" | "rejected" | "denied"
    removed: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)  # accepted, of a retired node
    planned: list[str] = field(default_factory=list)  # planned nodes without a key (fine)

    @property
    def ok(self) -> bool:
        return not self.stray and not self.missing and not self.retired

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "accepted": self.accepted, "stray": self.stray,
                "retired": self.retired, "missing": self.missing, "planned": self.planned,
                "removed": self.removed}


def compare(inv: Inventory, lists: dict[str, list[str]]) -> KeyReport:
    accepted = sorted(lists.get("minions", []))
    nodes = set(inv.nodes)
    retired = [k for k in accepted if k in inv.retired]
    stray = [k for k in accepted if k not in nodes and k not in inv.retired]
    missing: dict[str, str] = {}
    planned: list[str] = []
    for name, node in inv.nodes.items():
        if name in accepted:
            continue
        if node.state == "planned":  # not installed yet: no key is what is expected
            planned.append(name)
            continue
        where = [label for key, label in KEY_LISTS.items() if name in lists.get(key, [])]
        missing[name] = ", ".join(where) if where else "no key"
    return KeyReport(accepted, stray, missing, retired=retired, planned=planned)
