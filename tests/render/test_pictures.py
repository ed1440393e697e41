"""The pictures (fleet/render/pictures/): rack elevations, switch cabling, IB fabrics.

Well-formed SVG (expat, which refuses any XML that is not), every node and switch in its
rack and units, every switch port once with what is on it, values escaped, and the same
bytes on a second render."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fleet.inventory.load import parse
from fleet.inventory.model import Inventory
from fleet.render import pictures
from fleet.render.escape import UnsafeValueError, xml_text
from fleet.render.pictures import elevation
from fleet.yamlsrc import load

NS = "{http://www.w3.org/2000/svg}"
SMALL = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "small.yaml"


def svg(text: str) -> ET.Element:
    root = ET.fromstring(text.encode("utf-8"))  # expat: a well-formedness error raises
    assert root.tag == f"{NS}svg"
    assert int(root.get("width", "0")) > 0 and int(root.get("height", "0")) > 0
    return root


def tips(root: ET.Element) -> dict[str, ET.Element]:
    """Each shape's tooltip (its <title> child) -> the shape; a tooltip must be unique."""
    out: dict[str, ET.Element] = {}
    for shape in root.iter(f"{NS}rect"):
        title = shape.find(f"{NS}title")
        if title is not None:
            assert title.text is not None
            assert title.text not in out, f"two shapes titled {title.text!r}"
            out[title.text] = shape
    return out


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{NS}text")]


def test_every_picture_is_well_formed_svg(rendered: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = rendered
    shown = {p for p in files if p.startswith("pictures/")}
    assert shown == {"pictures/racks.svg", "pictures/fabrics.svg", "pictures/README.md",
                     *(f"pictures/switches/{s}.svg" for s in inv.raw.switches)}
    for path in sorted(shown - {"pictures/README.md"}):
        svg(files[path])


def _rack_of(root: ET.Element, shape: ET.Element) -> tuple[str, int, int]:
    """(rack, lowest U, highest U) that a device's rectangle covers, read from the drawing:
    the rack whose column holds it, and the unit numbers beside the cells it spans."""
    x, y = int(shape.get("x", "0")), int(shape.get("y", "0"))
    h = int(shape.get("height", "0"))
    heads = [(int(t.get("x", "0")), int(t.get("y", "0")), (t.text or "").split(" (")[0])
             for t in root.iter(f"{NS}text") if (t.text or "").endswith("U)")]
    left = x - 2  # the device is drawn 2 px inside the rack
    rack = [(hy, name) for hx, hy, name in heads if hx - elevation.RACK_W // 2 == left
            and hy < y]
    assert rack, f"no rack column at x={left}"
    head_y, name = max(rack)
    top = head_y - 18 + elevation.HEAD
    units = [int(t.text or "0") for t in root.iter(f"{NS}text")
             if t.get("text-anchor") == "end" and int(t.get("x", "0")) == left - 6
             and top <= int(t.get("y", "0")) - 13 < 10_000
             and y - 1 <= int(t.get("y", "0")) - 13 < y - 1 + h + 2]
    return name, min(units), max(units)


# where the real inventory's layout puts some machines and switches (tbox1: 8 to a rack)
SITE_PLACES = {
    "tbox-001": ("row1-rack01", 1, 4), "tbox-008": ("row1-rack01", 29, 32),
    "tbox-009": ("row1-rack02", 1, 4), "tbox-038": ("row1-rack05", 21, 24),
    "tbox-075": ("row2-rack05", 17, 20), "stor-025": ("row3-rack02", 25, 25),
    "model-08": ("row3-rack01", 25, 26), "head-01": ("row3-rack01", 36, 36),
    "sw1": ("row1-rack05", 41, 42), "ib2": ("row2-rack05", 39, 39),
}


def test_every_real_node_is_drawn_once_in_its_rack_and_units(site_inv: Inventory,
                                                                site_files: dict[str, str]
                                                                ) -> None:
    root = svg(site_files["pictures/racks.svg"])
    shapes = tips(root)
    labels = texts(root)
    for name in [*site_inv.nodes, *site_inv.raw.switches]:
        mine = [t for t in shapes if t.startswith(f"{name}: ")]
        assert len(mine) == 1, f"{name} drawn {len(mine)} times"
        assert labels.count(name) == 1, f"{name} labelled {labels.count(name)} times"
    for name, where in SITE_PLACES.items():
        shape = next(s for t, s in shapes.items() if t.startswith(f"{name}: "))
        assert _rack_of(root, shape) == where, name
    assert "Every device is placed" in labels


def test_each_row_of_racks_is_drawn_on_a_line_of_its_own(site_inv: Inventory,
                                                          site_files: dict[str, str]) -> None:
    root = svg(site_files["pictures/racks.svg"])
    heads = {(t.text or "").split(" (")[0]: int(t.get("y", "0")) for t in root.iter(f"{NS}text")
             if (t.text or "").endswith("U)")}
    assert set(heads) == set(site_inv.raw.racks)
    lines: dict[str | None, set[int]] = {}
    for name, rack in site_inv.raw.racks.items():
        lines.setdefault(rack.row, set()).add(heads[name])
    assert all(len(ys) == 1 for ys in lines.values()), lines  # a row: one line
    assert min(lines["row1"]) < min(lines["row2"]) < min(lines["row3"])  # in order, below
    labels = texts(root)
    assert all(row in labels for row in ("row1", "row2", "row3"))


def test_an_unplaced_switch_is_listed_not_drawn(small_files: dict[str, str]) -> None:
    root = svg(small_files["pictures/racks.svg"])
    assert not [t for t in tips(root) if t.startswith("ib2: ")]
    assert "Not placed (1)" in texts(root) and "ib2" in texts(root)
    shapes = tips(root)
    gpu3 = next(s for t, s in shapes.items() if t.startswith("gpu-03: "))
    gpu4 = next(s for t, s in shapes.items() if t.startswith("gpu-04: "))
    assert _rack_of(root, gpu3) == ("r1", 9, 12)  # part-b: one to a rack, from U9
    assert _rack_of(root, gpu4) == ("r2", 9, 12)


def test_every_switch_port_and_what_is_on_it(rendered: tuple[Inventory, dict[str, str]]
                                             ) -> None:
    inv, files = rendered
    for name, sw in inv.raw.switches.items():
        shapes = tips(svg(files[f"pictures/switches/{name}.svg"]))
        ports = sorted(int(m[1]) for t in shapes if (m := re.match(rf"{name} port (\d+): ", t)))
        assert ports == list(range(1, sw.ports + 1)), name
        on = {(iface.port, node.hostname, nic) for node in inv.nodes.values()
              for nic, iface in node.interfaces.items() if iface.switch == name}
        for port, host, nic in on:
            assert f"{name} port {port}: {host} {nic}" in shapes, (name, port)
        free = [t for t in shapes if t.endswith(": free")]
        assert len(free) == sw.ports - len(on), name


def test_each_fabric_shows_its_nodes_by_partition(rendered: tuple[Inventory, dict[str, str]]
                                                 ) -> None:
    inv, files = rendered
    root = svg(files["pictures/fabrics.svg"])
    shapes = tips(root)
    fills: dict[str | None, set[str]] = {}
    for node in inv.nodes.values():
        for nic, iface in node.interfaces.items():
            if iface.kind == "infiniband" and iface.switch is not None:
                shape = shapes[f"{iface.switch} port {iface.port}: {node.hostname} {nic}"]
                fills.setdefault(node.partition, set()).add(shape.get("fill", ""))
    assert fills and all(len(f) == 1 for f in fills.values()), fills
    assert len({f for fs in fills.values() for f in fs}) == len(fills)  # one per partition
    for part, members in ((p, inv.in_partition(p)) for p in fills if p):
        assert any(t.startswith(f"partition {part}") and t.endswith(f": {len(members)} nodes")
                   for t in texts(root)), part


def test_a_second_render_is_byte_identical(small_inv: Inventory) -> None:
    again = parse(SMALL.read_text(), str(SMALL))
    assert pictures.render(small_inv) == pictures.render(again)


def test_inventory_text_is_escaped_and_intact(small_text: str) -> None:
    data = load(small_text, "inventory.yaml").data
    hostile = "Q&A <b>\"x\" 'y' ]]> -->"
    data["switches"]["sw1"]["model"] = hostile
    data["profiles"]["storage"]["model"] = hostile
    import yaml

    inv = parse(yaml.safe_dump(data), "inventory.yaml")
    files = pictures.render(inv)
    panel = svg(files["pictures/switches/sw1.svg"])
    assert any(t.startswith(f"sw1: {hostile[:39]}") for t in texts(panel))
    racks = svg(files["pictures/racks.svg"])
    assert any(t == f"stor-1: {hostile}, U1-U1" for t in tips(racks))
    assert "<b>" not in files["pictures/racks.svg"]


@pytest.mark.parametrize("bad", ["a\x00b", "a\x0bb", "a\nb", "a\x85b", "a\ufffeb"])
def test_xml_text_refuses_what_xml_cannot_hold(bad: str) -> None:
    with pytest.raises(UnsafeValueError):
        xml_text(bad)


def test_xml_text_escapes_markup() -> None:
    assert xml_text("<a href='x'>&\"</a>") == \
        "&lt;a href=&apos;x&apos;&gt;&amp;&quot;&lt;/a&gt;"
