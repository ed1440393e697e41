"""Hardware facts from a running node (Salt grains) against the site's inventory: each
drift named with both values, and grains that agree give none. The grains are built from
the inventory node's own facts (what a healthy node's minion says), then varied."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from discover.sites import SITE
from fleet.discover.drift import MEMORY_SHARE, Drift, compare, from_grains
from fleet.inventory.load import parse
from fleet.inventory.model import Node

INV = parse(SITE, "inventory.yaml")
GPU_NODE = INV.nodes["tbox-001"]
STOR = next(n for n in INV.nodes.values() if n.profile.gpu is None)


def healthy(node: Node) -> dict[str, Any]:
    """What a node that matches its inventory entry and profile reports as grains."""
    p = node.profile
    return {"serialnumber": node.serial,
            "hwaddr_interfaces": {"lo": "00:00:00:00:00:00", "prov": node.mac.upper(),
                                  "other": "0c:42:a1:00:00:99"},
            "mem_total": int(p.memory_gb * 1024 * 0.97),  # the kernel keeps some
            "num_gpus": p.gpu.count if p.gpu else 0,
            "fleet_ib_guids": [node.ib_guid.upper()] if node.ib_guid else []}


@pytest.mark.parametrize("node", [GPU_NODE, STOR], ids=lambda n: n.hostname)
def test_a_healthy_node_has_no_drift(node: Node) -> None:
    assert compare(node, from_grains(healthy(node))) == []


def _only(node: Node, **changes: Any) -> Drift:
    g = copy.deepcopy(healthy(node)) | changes
    (d,) = compare(node, from_grains(g))
    return d


def test_a_missing_dimm() -> None:
    p = GPU_NODE.profile
    one_less = p.memory_gb - p.memory_gb // 12  # one DIMM of 12
    d = _only(GPU_NODE, mem_total=one_less * 1024)
    assert d.fact == "memory" and d.inventory.startswith(f"{p.memory_gb} GB")
    assert d.found == f"{one_less} GB"
    assert one_less < p.memory_gb * MEMORY_SHARE


def test_a_missing_gpu_and_a_gpu_on_a_node_without() -> None:
    assert GPU_NODE.profile.gpu is not None
    want = GPU_NODE.profile.gpu.count
    d = _only(GPU_NODE, num_gpus=want - 1)
    assert (d.fact, d.inventory.split()[0], d.found) == ("gpus", str(want), str(want - 1))
    assert _only(STOR, num_gpus=1).text.startswith("gpus: inventory 0 ")


def test_a_swapped_board_and_hca_and_boot_nic() -> None:
    d = _only(GPU_NODE, serialnumber="OTHER-BOARD-1")
    assert (d.fact, d.inventory, d.found) == ("serial", GPU_NODE.serial, "OTHER-BOARD-1")
    d = _only(GPU_NODE, fleet_ib_guids=["0x1070fd0300ffffff"])
    assert (d.fact, d.inventory) == ("ib_guid", GPU_NODE.ib_guid)
    assert "0x1070fd0300ffffff" in d.found
    d = _only(GPU_NODE, hwaddr_interfaces={"prov": "0c:42:a1:00:00:01"})
    assert d.fact == "mac" and d.inventory == GPU_NODE.mac and "0c:42:a1:00:00:01" in d.found


def test_a_swapped_boot_disk_where_the_inventory_names_its_serial() -> None:
    node = copy.copy(GPU_NODE)
    from fleet.inventory.schema.hardware import DiskMatch

    object.__setattr__(node, "boot_disk", DiskMatch(serial="S5GXNF0R123456"))
    facts = from_grains(healthy(node) | {"fleet_disk_serials": ["S5GXNF0R999999"]})
    (d,) = compare(node, facts)
    assert (d.fact, d.inventory) == ("boot_disk", "serial S5GXNF0R123456")
    assert compare(node, from_grains(healthy(node) | {
        "fleet_disk_serials": ["S5GXNF0R123456", "X"]})) == []


def test_hostile_grains_are_bounded_escaped_or_ignored() -> None:
    g = healthy(GPU_NODE) | {
        "serialnumber": "\x1b[2J\u202eevil",
        "hwaddr_interfaces": {f"n{i}": "zz:not:a:mac" for i in range(10_000)},
        "mem_total": "lots", "num_gpus": True,
        "fleet_ib_guids": "not a list"}
    facts = from_grains(g)
    assert (facts.memory_mb, facts.gpus) == (None, None)
    assert facts.macs == frozenset() and facts.ib_guids == frozenset()
    drifts = {d.fact: d for d in compare(GPU_NODE, facts)}
    assert set(drifts) == {"serial", "mac", "ib_guid"}
    assert "\x1b" not in drifts["serial"].found and "\\x1b" in drifts["serial"].found
    assert "\u202e" not in drifts["serial"].found


def test_what_the_grains_do_not_tell_is_not_compared() -> None:
    facts = from_grains({"serialnumber": GPU_NODE.serial})
    assert compare(GPU_NODE, facts) == []
    assert (facts.macs, facts.memory_mb, facts.gpus, facts.ib_guids) == (None,) * 4
