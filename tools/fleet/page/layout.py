"""``layout.json``: the racks as the elevations draw them (rows, heights), every placed
device at its units (fleet.inventory.racks.layout, the one derivation), the nodes placed
in no rack, each node's inventory facts (``fleet node show``'s record) and the legend."""

from __future__ import annotations

from typing import Any

from fleet.inventory.model import Inventory
from fleet.inventory.racks import layout
from fleet.ops.nodes import record
from fleet.page import contract
from fleet.render.pictures import style
from fleet.render.pictures.elevation import rack_rows


def build(inv: Inventory) -> dict[str, Any]:
    lay = layout(inv.raw, inv.nodes)
    devices: dict[str, list[dict[str, Any]]] = {name: [] for name in inv.raw.racks}
    for p in lay.placed:
        if p.rack not in devices:
            continue
        if p.kind == "node":
            node = inv.nodes[p.name]
            what, model = style.category(node), node.profile.model
        else:
            sw = inv.raw.switches[p.name]
            what, model = sw.kind, sw.model
        devices[p.rack].append({"name": p.name, "kind": p.kind, "unit": p.unit,
                                "height": p.height, "category": what, "model": model})
    placed = {p.name for p in lay.placed if p.rack in devices}
    rows = [{"label": label,
             "racks": [{"name": name, "height": inv.raw.racks[name].height_u,
                        "devices": devices[name]} for name in names]}
            for label, names in rack_rows(inv)]
    return {
        "site": inv.raw.site.name,
        "rows": rows,
        "unplaced": [h for h in inv.nodes if h not in placed],
        "nodes": {h: record(n) for h, n in inv.nodes.items()},
        "states": [list(s) for s in contract.STATES],
    }
