"""Rack placement (fleet/inventory/racks.py) beyond single-edit rules (single_edits.yaml):
how a group's machines are stacked, per rack and across racks."""

from __future__ import annotations

from fleet.inventory.load import parse
from fleet.inventory.racks import layout
from support.inventory_edits import edit

FILE = "inventory.yaml"


def where(text: str) -> dict[str, tuple[str, int, int]]:
    inv = parse(text, FILE)
    return {p.name: (p.rack, p.unit, p.top) for p in layout(inv.raw, inv.nodes).placed}


def test_a_group_fills_one_rack_then_the_next(small_text: str) -> None:
    text, _ = edit(small_text, "r2: {height_u: 24}", "r2: {height_u: 24}\n  r3: {height_u: 6}")
    text, _ = edit(text, "place: {racks: [r1]}", "place: {racks: [r3, r1]}")
    got = where(text)
    assert got["gpu-01"] == ("r3", 1, 4)  # a 6U rack holds one 4U machine
    assert got["gpu-02"] == ("r1", 1, 4)


def test_a_machine_with_its_own_place_leaves_its_slot_empty(small_text: str) -> None:
    text, _ = edit(small_text, 'bmc_mac: "52:54:00:01:00:65",',
                   'bmc_mac: "52:54:00:01:00:65", place: {rack: r2, unit: 13},')
    got = where(text)
    assert got["gpu-01"] == ("r2", 13, 16)
    assert got["gpu-02"] == ("r1", 5, 8)  # where it was: its position in part-a


def test_a_selection_of_a_group_moves_no_machine(small_text: str) -> None:
    inv = parse(small_text, FILE)
    some = {h: n for h, n in inv.nodes.items() if h != "gpu-01"}  # as an overlay selects
    placed = {p.name: (p.rack, p.unit) for p in layout(inv.raw, some).placed}
    assert placed["gpu-02"] == ("r1", 5)
    assert "gpu-01" not in placed


def test_the_site_puts_eight_tinyboxes_to_a_rack() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "inventory.yaml").read_text()
    got = where(text)
    racks = {}
    for host, (rack, _, _) in got.items():
        if host.startswith("tbox-"):
            racks.setdefault(rack, []).append(host)
    assert sorted(len(v) for v in racks.values()) == [5, 6, 8, 8, 8, 8, 8, 8, 8, 8]
    assert got["tbox-033"] == ("row1-rack05", 1, 4)
