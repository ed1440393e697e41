"""The cabling comparison (fleet/cabling/): the inventory's switch and port per NIC against
``lldpcli -f json show neighbors`` documents (fixtures in tests/fixtures/lldp/, in lldpd's
JSON shape; no real switch here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet.cabling.compare import Finding, compare, expected_links, trailing_port
from fleet.cabling.lldp import MAX_TEXT, LldpFormatError, Neighbour, neighbours
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "lldp"
SW3_MAC = "3c:2c:30:a3:00:01"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


@pytest.fixture(scope="module")
def site() -> Inventory:
    return load_inventory(ROOT / "inventory.yaml")


@pytest.fixture(scope="module")
def expected(site: Inventory) -> dict[tuple[str, str], tuple[str, int]]:
    defaults = yaml.safe_load((ROOT / "salt" / "network" / "defaults.yaml").read_text())
    return expected_links(site, defaults["values"]["boot_nic_name"])


def observe(*files: str) -> dict[str, list[Neighbour]]:
    """{node: neighbours} of the fixtures, each named after its node."""
    return {name.split(".")[0]: neighbours(fixture(name)) for name in files}


def only(findings: list[Finding], node: str) -> list[Finding]:
    return [f for f in findings if f.node == node]


def test_expected_links_are_the_hosts_ethernet_nics(site: Inventory,
                                                    expected: dict[tuple[str, str],
                                                                   tuple[str, int]]) -> None:
    assert expected[("tbox-001", "prov")] == ("sw1", 1)
    assert expected[("tbox-040", "prov")] == ("sw2", 2)
    assert expected[("stor-026", "prov")] == ("sw2", 38)
    assert expected[("head-01", "prov")] == ("sw3", 1)
    assert {nic for _, nic in expected} == {"prov"}  # no bmc, no InfiniBand
    assert len(expected) == len(site.nodes)


def test_one_neighbour_is_an_object_two_are_a_list() -> None:
    (one,) = neighbours(fixture("tbox-001.json"))
    assert one == Neighbour("prov", "sw1.sd1.comma.internal", "3c:2c:30:a1:00:01",
                            "ethernet1/1/1", "ifname", "tbox-001 prov")
    two = neighbours(fixture("head-01.json"))
    assert [(n.interface, n.chassis_name, n.port_id) for n in two] == [
        ("prov", "sw3.sd1.comma.internal", "ethernet1/1/1"),
        ("eno1", "mgmt1", "GigabitEthernet 1/47")]
    assert neighbours(fixture("tbox-002.no-neighbours.json")) == []


def test_a_chassis_without_a_system_name() -> None:
    (n,) = neighbours(fixture("cache-01.unnamed-chassis.json"))
    assert (n.chassis_name, n.chassis_id, n.port_id_type, n.port_descr) == (
        None, SW3_MAC, "mac", "ethernet1/1/11")


def test_right_switch_and_port_is_ok(expected: dict[tuple[str, str], tuple[str, int]]
                                     ) -> None:
    found = compare(expected, observe("tbox-001.json", "model-01.local-port.json"),
                    switches=["sw1", "sw2", "sw3"])
    assert only(found, "tbox-001") == [Finding("tbox-001", "prov", "ok", ("sw1", 1), "sw1", 1,
                                               "ethernet1/1/1")]
    (model,) = only(found, "model-01")  # port ID of subtype local: the description counts
    assert (model.status, model.seen_port, model.seen_port_id) == ("ok", 21, "ethernet1/1/21")


def test_wrong_port_and_wrong_switch(expected: dict[tuple[str, str], tuple[str, int]]) -> None:
    found = compare(expected, observe("tbox-040.wrong-port.json",
                                      "stor-026.wrong-switch.json"),
                    switches=["sw1", "sw2", "sw3"])
    (moved,) = only(found, "tbox-040")
    assert (moved.status, moved.expected, moved.seen_switch, moved.seen_port) == (
        "wrong_port", ("sw2", 2), "sw2", 3)
    (crossed,) = only(found, "stor-026")
    assert (crossed.status, crossed.expected, crossed.seen_switch, crossed.seen_port) == (
        "wrong_switch", ("sw2", 38), "sw1", 38)


def test_no_neighbour_is_a_missing_link_and_no_report_is_not_observed(
        expected: dict[tuple[str, str], tuple[str, int]]) -> None:
    found = compare(expected, observe("tbox-002.no-neighbours.json"),
                    switches=["sw1", "sw2", "sw3"])
    assert only(found, "tbox-002") == [Finding("tbox-002", "prov", "missing", ("sw1", 2))]
    assert only(found, "tbox-005") == [Finding("tbox-005", "prov", "not_observed", ("sw1", 5))]
    assert {f.status for f in found} == {"missing", "not_observed"}
    assert len(found) == len(expected)


def test_neighbours_where_none_is_cabled_are_unexpected(
        expected: dict[tuple[str, str], tuple[str, int]]) -> None:
    found = compare(expected, observe("head-01.json", "tbox-003.two-neighbours.json"),
                    switches=["sw1", "sw2", "sw3", "mgmt1"])
    head = only(found, "head-01")
    assert [(f.interface, f.status) for f in head] == [("prov", "ok"), ("eno1", "unexpected")]
    assert (head[1].expected, head[1].seen_switch, head[1].seen_port) == (None, "mgmt1", 47)
    tbox = only(found, "tbox-003")  # the switch, and a host heard through something between
    assert [(f.status, f.seen_switch) for f in tbox] == [("ok", "sw1"),
                                                         ("unexpected", "tbox-004")]


def test_a_node_the_inventory_does_not_know_is_unexpected() -> None:
    found = compare({}, {"stray-01": neighbours(fixture("tbox-001.json"))}, switches=["sw1"])
    assert [(f.node, f.status, f.seen_switch, f.seen_port) for f in found] == [
        ("stray-01", "unexpected", "sw1", 1)]


def test_an_unnamed_chassis_is_known_by_its_id(expected: dict[tuple[str, str], tuple[str, int]]
                                               ) -> None:
    seen = observe("cache-01.unnamed-chassis.json")
    (without,) = only(compare(expected, seen, switches=["sw3"]), "cache-01")
    assert (without.status, without.seen_switch) == ("wrong_switch", SW3_MAC)
    (known,) = only(compare(expected, seen, switches=["sw3"], switch_ids={SW3_MAC: "sw3"}),
                    "cache-01")
    assert (known.status, known.seen_switch, known.seen_port) == ("ok", "sw3", 11)


def test_a_port_without_a_number_is_unreadable(expected: dict[tuple[str, str], tuple[str, int]]
                                               ) -> None:
    doc = fixture("tbox-001.json")
    doc["lldp"]["interface"]["prov"]["port"]["id"]["value"] = "uplink"
    (f,) = only(compare(expected, {"tbox-001": neighbours(doc)}, switches=["sw1"]), "tbox-001")
    assert (f.status, f.seen_port, f.seen_port_id) == ("unreadable_port", None, "uplink")


@pytest.mark.parametrize(("name", "port"), [
    ("ethernet1/1/12", 12), ("swp12", 12), ("Eth1/12", 12), ("ethernet1/1/12:1", 12),
    ("GigabitEthernet 1/47", 47), ("uplink", None), ("", None)])
def test_trailing_port(name: str, port: int | None) -> None:
    assert trailing_port(name) == port


@pytest.mark.parametrize(("edit", "says"), [
    (lambda d: d.pop("lldp"), "no 'lldp' key"),
    (lambda d: d["lldp"].update(interface="prov"), "expected an object"),
    (lambda d: d["lldp"]["interface"]["prov"]["port"]["id"].update(value=7),
     "expected a string"),
    (lambda d: d["lldp"]["interface"]["prov"]["port"].update(descr="x" * (MAX_TEXT + 1)),
     "longer than"),
    (lambda d: d["lldp"]["interface"]["prov"]["chassis"].update(other={}),
     "one system name"),
])
def test_malformed_documents_are_refused(edit: Any, says: str) -> None:
    doc = fixture("tbox-001.json")
    edit(doc)
    with pytest.raises(LldpFormatError, match=says):
        neighbours(doc)
