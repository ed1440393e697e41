"""``pictures/switches/<switch>.svg``: every port of a switch, the node and NIC cabled to
it (coloured by what the node is), free ports drawn dashed."""

from __future__ import annotations

from collections.abc import Callable

from fleet.inventory.model import Inventory, Node
from fleet.inventory.racks import layout
from fleet.render.pictures import style
from fleet.render.pictures.svg import MUTED, Svg, clip

PORT_W, PORT_H = 112, 52
PER_ROW = 16
MARGIN = 20

Cabled = dict[str, dict[int, tuple[Node, str]]]  # switch -> port -> (node, NIC name)


def cabling(inv: Inventory) -> tuple[Cabled, dict[str, list[tuple[Node, str]]]]:
    """What is on each switch port, and the NICs on a switch with no port given."""
    ports: Cabled = {name: {} for name in inv.raw.switches}
    portless: dict[str, list[tuple[Node, str]]] = {name: [] for name in inv.raw.switches}
    for node in inv.nodes.values():
        for nic, iface in node.interfaces.items():
            if iface.switch is None:
                continue
            if iface.port is None:
                portless[iface.switch].append((node, nic))
            else:
                ports[iface.switch][iface.port] = (node, nic)
    return ports, portless


Colour = Callable[[Node], tuple[str, str]]  # node -> (fill, legend label)


def panel(svg: Svg, x: int, y: int, switch: str, count: int,
          on: dict[int, tuple[Node, str]], colour: Colour) -> int:
    """Ports 1..count of ``switch`` from (x, y), PER_ROW to a row; returns the height."""
    for port in range(1, count + 1):
        px = x + ((port - 1) % PER_ROW) * PORT_W
        py = y + ((port - 1) // PER_ROW) * (PORT_H + 6)
        cabled = on.get(port)
        if cabled is None:
            svg.rect(px, py, PORT_W - 4, PORT_H, style.FREE, stroke="#999999", dashed=True,
                     tip=f"{switch} port {port}: free")
            svg.text(px + 6, py + 16, str(port), size=12, bold=True, fill=MUTED)
            svg.text(px + 6, py + 34, "free", size=11, fill=MUTED)
            continue
        node, nic = cabled
        fill, _ = colour(node)
        svg.rect(px, py, PORT_W - 4, PORT_H, fill,
                 tip=f"{switch} port {port}: {node.hostname} {nic}")
        svg.text(px + 6, py + 16, str(port), size=12, bold=True)
        svg.text(px + 6, py + 32, clip(node.hostname, 15), size=12)
        svg.text(px + 6, py + 46, clip(nic, 16), size=10, fill="#333333")
    rows = -(-count // PER_ROW)
    return rows * (PORT_H + 6)


def _by_role(node: Node) -> tuple[str, str]:
    cat = style.category(node)
    return style.FILL[cat], cat


def render_switch(inv: Inventory, name: str, on: dict[int, tuple[Node, str]],
                  portless: list[tuple[Node, str]], where: str) -> str:
    sw = inv.raw.switches[name]
    rows = -(-sw.ports // PER_ROW)
    cats = {style.category(n) for n, _ in on.values()}
    legend = [*style.legend(cats), (style.FREE, "free port")]
    width = 2 * MARGIN + min(sw.ports, PER_ROW) * PORT_W
    height = 2 * MARGIN + 70 + rows * (PORT_H + 6) + 40 + 20 * len(legend) + 40
    width = max(width, 640)
    svg = Svg(width, height, f"cabling of switch {name}")
    svg.text(MARGIN, MARGIN + 16, f"{name}: {clip(sw.model, 40)}, {sw.kind}, {sw.ports} "
             f"ports of {sw.speed_gbps} Gb/s", size=18, bold=True)
    svg.text(MARGIN, MARGIN + 40, f"{len(on)} ports cabled, {sw.ports - len(on)} free; {where}",
             size=13, fill=MUTED)
    y = MARGIN + 60
    y += panel(svg, MARGIN, y, name, sw.ports, on, _by_role) + 10
    if portless:
        names = ", ".join(f"{n.hostname} {nic}" for n, nic in portless[:12])
        more = f" and {len(portless) - 12} more" if len(portless) > 12 else ""
        svg.text(MARGIN, y + 14, f"on this switch, port not given: {names}{more}", size=12)
    y += 30
    svg.legend(MARGIN, y, legend)
    return svg.done()


def render(inv: Inventory) -> dict[str, str]:
    ports, portless = cabling(inv)
    places = {p.name: p for p in layout(inv.raw, inv.nodes).placed if p.kind == "switch"}
    out = {}
    for name in inv.raw.switches:
        p = places.get(name)
        where = (f"rack {p.rack} U{p.unit}" + (f"-U{p.top}" if p.top != p.unit else "")
                 if p else "not placed in a rack")
        out[name] = render_switch(inv, name, ports[name], portless[name], where)
    return out
