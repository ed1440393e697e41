"""``pictures/racks.svg``: the front elevation of every rack, U1 at the bottom, each
device drawn over its units, coloured by what it is and labelled with its name; then the
devices placed in no rack."""

from __future__ import annotations

from fleet.inventory.model import Inventory
from fleet.inventory.racks import Placed, layout
from fleet.render.pictures import style
from fleet.render.pictures.svg import MUTED, Svg, clip

U_PX = 18  # one rack unit
RACK_W = 230  # a rack's inside width
GUTTER = 34  # the unit numbers left of a rack
GAP = 36  # between racks
PER_ROW = 7  # racks side by side
MARGIN = 20
HEAD = 30  # the rack's name above it
LABEL = 28  # the row's name above its racks
NAMES_PER_LINE = 10  # unplaced devices listed a line at a time


def _fill(inv: Inventory, p: Placed) -> tuple[str, str]:
    """(category, detail label) of a placed device."""
    if p.kind == "switch":
        sw = inv.raw.switches[p.name]
        return sw.kind, sw.model
    node = inv.nodes[p.name]
    return style.category(node), node.profile.model


def _rack(svg: Svg, inv: Inventory, x: int, y: int, name: str, height: int,
          devices: list[Placed], used: set[str]) -> None:
    svg.text(x + GUTTER + RACK_W // 2, y + 18, f"{name} ({height}U)", size=14, bold=True,
             anchor="middle")
    top = y + HEAD
    for u in range(1, height + 1):
        uy = top + (height - u) * U_PX
        svg.rect(x + GUTTER, uy, RACK_W, U_PX, style.EMPTY_U, stroke="#cccccc")
        svg.text(x + GUTTER - 6, uy + 13, str(u), size=10, anchor="end", fill=MUTED)
    svg.rect(x + GUTTER, top, RACK_W, height * U_PX, "none", stroke="#000000")
    for p in devices:
        cat, detail = _fill(inv, p)
        used.add(cat)
        dy = top + (height - p.top) * U_PX
        svg.rect(x + GUTTER + 2, dy + 1, RACK_W - 4, p.height * U_PX - 2, style.FILL[cat],
                 tip=f"{p.name}: {detail}, U{p.unit}-U{p.top}")
        mid = dy + (p.height * U_PX) // 2 + 5
        svg.text(x + GUTTER + 8, mid, p.name, size=12, bold=True)
        svg.text(x + GUTTER + RACK_W - 8, mid, clip(detail, 20), size=10, anchor="end")


def rack_rows(inv: Inventory) -> list[tuple[str, list[str]]]:
    """The racks as drawn: each row (in order of its first rack) on lines of PER_ROW,
    racks in no row after them."""
    by_row: dict[str | None, list[str]] = {}
    for name, rack in inv.raw.racks.items():
        by_row.setdefault(rack.row, []).append(name)
    if None in by_row:
        by_row[None] = by_row.pop(None)  # last
    out = []
    for row, names in by_row.items():
        label = ("racks in no row" if row is None else row if row.startswith("row")
                 else f"row {row}")
        for i in range(0, len(names), PER_ROW):
            out.append((label if i == 0 else f"{label} (continued)", names[i:i + PER_ROW]))
    return out


def render(inv: Inventory) -> str:
    lay = layout(inv.raw, inv.nodes)
    racks = inv.raw.racks
    by_rack: dict[str, list[Placed]] = {name: [] for name in racks}
    for p in lay.placed:
        if p.rack in by_rack:
            by_rack[p.rack].append(p)
    placed = {p.name for p in lay.placed}
    unplaced = [h for h in inv.nodes if h not in placed]
    unplaced += [s for s in inv.raw.switches if s not in placed]
    names = list(racks)
    rows = rack_rows(inv)
    row_h = [LABEL + HEAD + max(racks[n].height_u for n in row) * U_PX + GAP
             for _, row in rows]
    cols = max((len(row) for _, row in rows), default=1)
    lines = -(-len(unplaced) // NAMES_PER_LINE)
    width = max(2 * MARGIN + cols * (GUTTER + RACK_W + GAP), 760)
    height = 2 * MARGIN + 40 + sum(row_h) + 140 + 20 * (lines + 1)
    svg = Svg(width, height, f"racks of {inv.raw.site.name}")
    svg.text(MARGIN, MARGIN + 16, f"Racks of site {inv.raw.site.name}: {len(names)} racks, "
             f"{len(placed)} devices placed, {len(unplaced)} not placed", size=18, bold=True)
    used: set[str] = set()
    y = MARGIN + 40
    for (label, row), h in zip(rows, row_h, strict=True):
        svg.text(MARGIN, y + 18, label, size=16, bold=True)
        for i, name in enumerate(row):
            _rack(svg, inv, MARGIN + i * (GUTTER + RACK_W + GAP), y + LABEL, name,
                  racks[name].height_u, by_rack[name], used)
        y += h
    if not names:
        svg.text(MARGIN, y + 14, "no racks declared (inventory: racks)", size=14, fill=MUTED)
        y += 30
    svg.text(MARGIN, y + 14, "Legend", size=14, bold=True)
    y += 24 + svg.legend(MARGIN, y + 24, style.legend(used) or style.legend({"other"}))
    svg.text(MARGIN, y + 30, f"Not placed ({len(unplaced)})" if unplaced else
             "Every device is placed", size=14, bold=True)
    for i in range(lines):
        chunk = unplaced[i * NAMES_PER_LINE:(i + 1) * NAMES_PER_LINE]
        svg.text(MARGIN, y + 52 + 20 * i, ", ".join(chunk), size=12)
    return svg.done()
