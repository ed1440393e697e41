"""Pictures of the fleet, rendered from the inventory into ``pictures/``:

- ``racks.svg``              every rack's elevation: each device at its units, by role
- ``switches/<switch>.svg``  every switch's ports: the node and NIC on each, free ports
- ``fabrics.svg``            each InfiniBand fabric, its ports by Slurm partition
- ``README.md``              an index of them

SVG, deterministic (integer geometry, inventory order), every value XML-escaped.
"""

from __future__ import annotations

from fleet.inventory.model import Inventory
from fleet.render.header import TEXT
from fleet.render.pictures import elevation, fabrics, panels

TOP = "pictures"


def _index(inv: Inventory, switches: list[str]) -> str:
    lines = [f"<!-- {TEXT} -->", f"# Pictures of site {inv.raw.site.name}", "",
             "## Racks", "", "![the rack elevations](racks.svg)", "",
             "## Switches (cabling per port)", ""]
    lines += [f"- [{name}](switches/{name}.svg)" for name in switches]
    lines += ["", "## InfiniBand fabrics", "", "![the InfiniBand fabrics](fabrics.svg)", ""]
    return "\n".join(lines)


def render(inv: Inventory) -> dict[str, str]:
    files = {f"{TOP}/racks.svg": elevation.render(inv),
             f"{TOP}/fabrics.svg": fabrics.render(inv)}
    switches = panels.render(inv)
    for name, text in switches.items():
        files[f"{TOP}/switches/{name}.svg"] = text
    files[f"{TOP}/README.md"] = _index(inv, list(switches))
    return files
