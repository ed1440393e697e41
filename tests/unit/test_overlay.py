"""Overlays (`fleet ... --overlay FILE`): JSON-merge-patch on the inventory + only_nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.inventory.load import parse
from fleet.problems import InventoryError, Problem
from fleet.render import render_all

SMALL = (Path(__file__).resolve().parents[1] / "fixtures" / "small.yaml").read_text()
INV, OVL = "inventory.yaml", "overlay.yaml"


def problems(overlay: str) -> list[Problem]:
    with pytest.raises(InventoryError) as info:
        parse(SMALL, INV, (overlay, OVL))
    return info.value.problems


def test_mappings_merge_values_replace_and_null_deletes() -> None:
    patch = "slurm: {version: '23.11'}\nsite: {timezone: UTC, dns_servers: null}\n"
    inv = parse(SMALL, INV, (patch, OVL))
    assert inv.raw.slurm is not None and inv.raw.slurm.version == "23.11"
    assert inv.raw.slurm.cluster == "lab"  # merged, not replaced
    assert inv.raw.site.timezone == "UTC"
    assert inv.raw.site.dns_servers == []  # deleted -> default


def test_errors_in_overlay_values_point_into_the_overlay() -> None:
    found = problems("slurm:\n  version: '23.11'\n  bogus: 1\n")
    assert [(p.pos.file, p.pos.line, p.pos.col, p.path) for p in found] == [
        (OVL, 3, 3, "slurm.bogus")]


def test_errors_in_untouched_values_still_point_into_the_inventory() -> None:
    found = problems("mkv: {arrays: {data: {replicas: 5}}}\n")
    assert [(p.pos.file, p.path, p.code) for p in found] == [
        (OVL, "mkv.arrays.data.replicas", "replicas")]
    found = problems("site: {provisioning_host: gpu-01}\n")
    assert any(p.pos.file == OVL and "provisioning" in p.message for p in found)


def test_only_nodes_keeps_the_selection_and_drops_empty_groups() -> None:
    inv = parse(SMALL, INV, ("only_nodes: [head-01, gpu-01, gpu-03, stor-1, stor-2]\n", OVL))
    assert list(inv.nodes) == ["head-01", "gpu-01", "gpu-03", "stor-1", "stor-2"]
    files = render_all(inv)
    assert {p.rsplit("/", 1)[1] for p in files if p.startswith("pillar/nodes/")} == {
        f"{h}.sls" for h in inv.nodes}
    assert "gpu-02" not in files["pillar/slurm.sls"]


def test_only_nodes_must_name_known_nodes_and_keep_the_service_hosts() -> None:
    found = problems("only_nodes: [gpu-01, gpu-03, stor-1, stor-2, nope]\n")
    messages = [(p.path, p.message) for p in found]
    assert ("only_nodes[4]", "unknown node 'nope'") in messages
    assert any(path == "only_nodes" and "head-01" in msg for path, msg in messages)
    assert all(p.pos.file == OVL for p in found if p.path.startswith("only_nodes"))


def test_only_nodes_must_be_a_list_of_names() -> None:
    found = problems("only_nodes: head-01\n")
    assert [(p.path, p.code) for p in found] == [("only_nodes", "type")]


def test_a_partition_emptied_by_the_selection_is_reported() -> None:
    found = problems("only_nodes: [head-01, gpu-01, stor-1, stor-2]\n")
    assert any(p.code == "empty" and "tbox2" in p.message for p in found)


def test_overlays_apply_in_order_and_each_reports_its_own_lines() -> None:
    first = "slurm: {version: '23.11'}\nsite: {timezone: UTC}\n"
    second = "site:\n  timezone: Europe/Berlin\n"
    inv = parse(SMALL, INV, [(first, "a.yaml"), (second, "b.yaml")])
    assert inv.raw.site.timezone == "Europe/Berlin"  # the later overlay wins
    assert inv.raw.slurm is not None and inv.raw.slurm.version == "23.11"
    with pytest.raises(InventoryError) as info:
        parse(SMALL, INV, [(first, "a.yaml"), ("slurm:\n  bogus: 1\n", "b.yaml")])
    assert [(p.pos.file, p.pos.line, p.path) for p in info.value.problems] == [
        ("b.yaml", 2, "slurm.bogus")]
