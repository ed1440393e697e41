"""``pictures/fabrics.svg``: each InfiniBand fabric (one IB switch), its ports coloured
by the Slurm partition of the node on each, with the fabric's subnet manager."""

from __future__ import annotations

from fleet.inventory.model import Inventory, Node
from fleet.render.pictures import style
from fleet.render.pictures.panels import PER_ROW, PORT_H, PORT_W, cabling, panel
from fleet.render.pictures.svg import MUTED, Svg

MARGIN = 20


def _fills(inv: Inventory) -> dict[str | None, str]:
    parts = list(inv.raw.slurm.partitions) if inv.raw.slurm else []
    fills: dict[str | None, str] = {
        p: style.PARTITION_FILLS[i % len(style.PARTITION_FILLS)] for i, p in enumerate(parts)}
    fills[None] = style.NO_PARTITION
    return fills


def _sm(inv: Inventory, name: str) -> str:
    sw = inv.raw.switches[name]
    where = [*(["the switch"] if sw.subnet_manager else []), *sw.sm_hosts]
    return "subnet manager: " + (", ".join(where) if where else "none")


def render(inv: Inventory) -> str:
    fabrics = [n for n, sw in inv.raw.switches.items() if sw.kind == "infiniband"]
    ports, _ = cabling(inv)
    fills = _fills(inv)
    default = next((n for n, p in (inv.raw.slurm.partitions.items() if inv.raw.slurm else ())
                    if p.default), None)

    def colour(node: Node) -> tuple[str, str]:
        return fills.get(node.partition, style.NO_PARTITION), node.partition or "no partition"

    sections = []
    for name in fabrics:
        rows = -(-inv.raw.switches[name].ports // PER_ROW)
        members: dict[str | None, int] = {}
        for node, _nic in ports[name].values():
            members[node.partition] = members.get(node.partition, 0) + 1
        sections.append((name, rows, members))
    width = max(2 * MARGIN + PER_ROW * PORT_W, 760)
    height = 2 * MARGIN + 40 + sum(90 + r * (PORT_H + 6) + 20 * len(m) + 30
                                   for _, r, m in sections) + (30 if not fabrics else 0)
    svg = Svg(width, height, f"InfiniBand fabrics of {inv.raw.site.name}")
    svg.text(MARGIN, MARGIN + 16, f"InfiniBand fabrics of site {inv.raw.site.name}: "
             f"{len(fabrics)}, ports coloured by Slurm partition", size=18, bold=True)
    y = MARGIN + 40
    if not fabrics:
        svg.text(MARGIN, y + 14, "no InfiniBand switches", size=14, fill=MUTED)
    for name, _rows, members in sections:
        sw = inv.raw.switches[name]
        svg.text(MARGIN, y + 20, f"{name}: {sw.model}, {len(ports[name])} of {sw.ports} ports "
                 f"cabled", size=16, bold=True)
        svg.text(MARGIN, y + 40, _sm(inv, name), size=13, fill=MUTED)
        y += 56
        y += panel(svg, MARGIN, y, name, sw.ports, ports[name], colour) + 10
        legend = [(fills.get(p, style.NO_PARTITION),
                   (f"partition {p}" + (" (default)" if p == default else "") if p
                    else "no partition") + f": {n} nodes")
                  for p, n in sorted(members.items(), key=lambda kv: kv[0] or "\uffff")]
        y += svg.legend(MARGIN, y, legend) + 30
    return svg.done()
