"""fleet discover's matching: a report to the planned node on its boot NIC's switch port
(LLDP), else by serial or BMC MAC, else unmatched; two machines on one port match
neither. On the site's own inventory (its port plan is the one expand derives)."""

from __future__ import annotations

import copy

from discover.reports import GOOD
from discover.sites import SITE, as_report, found, planned, without
from fleet.discover import plan


def test_a_machine_with_no_entry_yet_is_planned_on_its_groups_port() -> None:
    _, p = plan.load(without("tbox-003"), "inventory.yaml")
    assert p["tbox-003"].port == ("sw1", 3) and not p["tbox-003"].entered
    assert p["tbox-003"].serial is None and p["tbox-003"].mac is None
    assert p["tbox-004"].entered and p["tbox-004"].port == ("sw1", 4)
    assert p["stor-026"].port == ("sw2", 38)


def test_by_the_switch_port_first() -> None:
    _, _, (m,) = found(without("tbox-003"), as_report())
    assert (m.node, m.by, m.port, m.problems) == ("tbox-003", "port", ("sw1", 3), [])


def test_a_port_named_only_in_its_description_or_by_fqdn() -> None:
    nics = copy.deepcopy(GOOD["nics"])
    nics[0]["lldp"] = {"chassis_name": "sw2.sd1.comma.internal", "port_id": "aa:bb",
                       "port_id_type": "mac", "port_descr": "ethernet1/1/40"}
    _, _, (m,) = found(without("stor-028"), as_report(nics=nics))
    assert (m.node, m.by, m.port) == ("stor-028", "port", ("sw2", 40))


def test_then_by_serial_then_by_bmc_mac() -> None:
    nics = copy.deepcopy(GOOD["nics"])
    nics[0]["lldp"] = None
    dmi = dict(GOOD["dmi"], serial="tbp247266991")  # tbox-004's, in another case
    _, _, (m,) = found(planned("tbox-004"), as_report(nics=nics, dmi=dmi))
    assert (m.node, m.by, m.port) == ("tbox-004", "serial", None)
    _, _, (m,) = found(SITE, as_report(nics=nics, bmc_mac="a8:a1:59:21:4c:4f"))
    assert (m.node, m.by) == ("tbox-004", "bmc_mac")


def test_a_stand_in_entry_matches_nothing_but_its_port() -> None:
    nics = copy.deepcopy(GOOD["nics"])
    nics[0]["lldp"] = None
    dmi = dict(GOOD["dmi"], serial=plan.STUB_SERIAL + "tbox-003")
    _, _, (m,) = found(without("tbox-003"), as_report(nics=nics, dmi=dmi))
    assert m.node is None and m.by is None


def test_unmatched_an_unknown_switch_or_port_and_no_facts() -> None:
    nics = copy.deepcopy(GOOD["nics"])
    nics[0]["lldp"]["chassis_name"] = "sw9"
    _, _, (m,) = found(SITE, as_report(nics=nics))
    assert (m.node, m.by, m.port) == (None, None, None)


def test_two_machines_on_one_port_match_neither_and_name_each_other() -> None:
    second = copy.deepcopy(GOOD["nics"])
    second[0]["mac"] = "0c:42:a1:aa:00:03"
    second[1]["mac"] = "0c:42:a1:aa:00:04"
    a, b = as_report(), as_report(boot_mac="0c:42:a1:aa:00:03", nics=second)
    _, _, ms = found(without("tbox-003"), a, b)
    assert [m.node for m in ms] == [None, None]
    assert ms[0].problems == ["two machines on sw1 port 3: also 0c:42:a1:aa:00:03"]
    assert ms[1].problems == ["two machines on sw1 port 3: also 0c:42:a1:aa:00:01"]
