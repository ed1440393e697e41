"""fleet discover accept: the facts of a matched report written into inventory.yaml as an
edit of the node's own lines (every other byte kept), validated before it is written;
every conflict refused and named."""

from __future__ import annotations

import copy
import difflib
import json
from pathlib import Path

import pytest

from discover.reports import GOOD, body, report
from discover.sites import SITE, as_report, entry_line, found, planned, without
from fleet.cli import main
from fleet.discover import accept, edit, store
from fleet.discover.plan import load
from fleet.discover.report import Report, parse


def changed(old: str, new: str) -> tuple[list[str], list[str]]:
    """The lines taken out and put in; everything else is equal byte for byte."""
    out, put = [], []
    for line in difflib.ndiff(old.splitlines(True), new.splitlines(True)):
        if line.startswith("- "):
            out.append(line[2:])
        elif line.startswith("+ "):
            put.append(line[2:])
    return out, put


def run(text: str, *reports: Report, nodes: list[str] | None = None
        ) -> tuple[str, list[accept.Outcome]]:
    inv, p, ms = found(text, *reports)
    return accept.accept(text, inv, p, ms, nodes)


def test_a_new_entry_is_one_inserted_line_after_its_neighbour() -> None:
    text = without("tbox-003")
    new, (o,) = run(text, as_report())
    assert o.verdict == "accepted" and o.node == "tbox-003"
    out, put = changed(text, new)
    assert out == []
    assert put == ['  tbox-003: {serial: TBPNEW0001, mac: "0c:42:a1:aa:00:01", bmc_mac: '
                   '"a8:a1:59:aa:00:01", ib_guid: "0x1070fd0300aa0001", hardware: {gpus: 8, '
                   'cpu_sockets: 2, cores_per_socket: 32, memory_gb: 384}, state: burn-in}\n']
    assert new.index(put[0]) == new.index(entry_line(new, "tbox-002")) + len(
        entry_line(new, "tbox-002"))
    inv, p = load(new, "inventory.yaml")
    assert p["tbox-003"].entered and inv.nodes["tbox-003"].state == "burn-in"
    assert inv.nodes["tbox-003"].mac == "0c:42:a1:aa:00:01"


def test_an_entered_planned_node_changes_on_its_own_line_only_and_keeps_comments() -> None:
    text = planned("tbox-003").replace(
        "  tbox-003: {", "  # the replacement board, 2026-11\n  tbox-003: {")
    new, (o,) = run(text, as_report())
    assert o.verdict == "accepted"
    out, put = changed(text, new)
    assert out == [entry_line(text, "tbox-003")] and len(put) == 1
    assert put[0].startswith("  tbox-003: {state: burn-in, serial: TBPNEW0001, mac: "
                             '"0c:42:a1:aa:00:01", bmc_mac: "a8:a1:59:aa:00:01", ib_guid: '
                             '"0x1070fd0300aa0001", hardware: {')
    assert "  # the replacement board, 2026-11\n" in new
    assert new.count("\n#") == text.count("\n#")


def test_a_block_style_entry_keeps_its_style_and_inner_comment() -> None:
    line = entry_line(SITE, "tbox-003")
    block = ("  tbox-003:\n    state: planned\n    serial: TYPO\n"
             "    # typed from the label; check\n    mac: '0c:42:a1:bb:dc:18'\n"
             "    bmc_mac: \"a8:a1:59:83:e2:9f\"\n\n")
    text = SITE.replace(line, block)
    new, (o,) = run(text, as_report())
    assert o.verdict == "accepted"
    out, put = changed(text, new)
    kept = "    # typed from the label; check\n"
    assert out == [x for x in block.splitlines(True)[1:6] if x != kept]
    assert put == ["    state: burn-in\n", "    serial: TBPNEW0001\n",
                   "    mac: '0c:42:a1:aa:00:01'\n",  # its own quoting kept
                   '    bmc_mac: "a8:a1:59:aa:00:01"\n', '    ib_guid: "0x1070fd0300aa0001"\n',
                   "    hardware: {gpus: 8, cpu_sockets: 2, cores_per_socket: 32, "
                   "memory_gb: 384}\n"]
    assert kept in new and "\n\n  tbox-004:" in new


def test_a_second_accept_changes_nothing() -> None:
    new, _ = run(without("tbox-003"), as_report())
    again, (o,) = run(new, as_report())
    assert o.verdict == "unchanged" and again == new


def _refused(text: str, *reports: Report, nodes: list[str] | None = None) -> list[str]:
    new, outcomes = run(text, *reports, nodes=nodes)
    assert new == text, "a refusal writes nothing"
    assert [o.verdict for o in outcomes] == ["refused"] * len(outcomes)
    return [r for o in outcomes for r in o.reasons]


def test_conflict_the_boot_mac_is_another_nodes() -> None:
    nics = copy.deepcopy(GOOD["nics"])
    nics[0]["mac"] = "0c:42:a1:93:40:14"  # tbox-001's
    r = as_report(boot_mac="0c:42:a1:93:40:14", nics=nics)
    assert _refused(without("tbox-003"), r) == ["MAC 0c:42:a1:93:40:14 is tbox-001's"]


def test_conflict_the_serial_bmc_mac_and_guid_are_other_nodes() -> None:
    dmi = dict(GOOD["dmi"], serial="TBP249076634")  # tbox-002's
    r = as_report(dmi=dmi, bmc_mac="a8:a1:59:21:4c:4f")  # tbox-004's
    pci = copy.deepcopy(GOOD["pci"])
    pci[-1]["guid"] = "0x1070fd03005d7e56"  # tbox-007's
    r2 = as_report(pci=pci)
    assert _refused(without("tbox-003"), r) == ["serial TBP249076634 is tbox-002's",
                                                "BMC MAC a8:a1:59:21:4c:4f is tbox-004's"]
    assert _refused(without("tbox-003"), r2) == ["HCA GUID 0x1070fd03005d7e56 is tbox-007's"]


def test_conflict_two_machines_on_one_port() -> None:
    nics = copy.deepcopy(GOOD["nics"])
    nics[0]["mac"], nics[1]["mac"] = "0c:42:a1:aa:00:03", "0c:42:a1:aa:00:04"
    a, b = as_report(), as_report(boot_mac="0c:42:a1:aa:00:03", nics=nics)
    assert _refused(without("tbox-003"), a, b, nodes=["tbox-003"]) == [
        "no report matches it"]
    _, _, ms = found(without("tbox-003"), a, b)
    assert all(m.problems for m in ms)


def test_conflict_two_reports_match_one_node() -> None:
    nics = copy.deepcopy(GOOD["nics"])
    nics[0]["lldp"] = None
    nics[0]["mac"], nics[1]["mac"] = "0c:42:a1:aa:00:03", "0c:42:a1:aa:00:04"
    by_serial = as_report(boot_mac="0c:42:a1:aa:00:03", nics=nics,
                          dmi=dict(GOOD["dmi"], serial="TBP247739959"))  # tbox-003's
    reasons = _refused(planned("tbox-003"), as_report(), by_serial)
    assert reasons == ["two machines match it: 0c:42:a1:aa:00:01, 0c:42:a1:aa:00:03"]


def test_conflict_an_active_node_whose_facts_differ() -> None:
    assert _refused(SITE, as_report()) == [
        "tbox-003 is active and its serial, mac, bmc_mac, ib_guid differ: a replaced "
        "machine is an operator's edit of inventory.yaml"]


def test_a_new_entry_needs_a_bmc_mac() -> None:
    assert _refused(without("tbox-003"), as_report(bmc_mac=None))[0].startswith(
        "the report has no BMC MAC")


def test_cli_accept_validates_before_writing(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Through `fleet discover accept`: a machine with a GPU missing makes the file
    invalid (hardware against the profile): refused, the file untouched; the full one is
    written, and `list` shows it matched."""
    inv_file = tmp_path / "inventory.yaml"
    inv_file.write_text(without("tbox-003"))
    reports = tmp_path / "reports"
    weak = parse(body(report(pci=GOOD["pci"][1:])))  # 7 GPUs
    store.save(reports, weak, "10.1.3.5")
    args = ["discover", "accept", "tbox-003", "--reports", str(reports), "-i", str(inv_file)]
    assert main(args) == 1
    assert inv_file.read_text() == without("tbox-003")
    assert "gpus" in capsys.readouterr().err
    store.save(reports, as_report(), "10.1.3.5")
    assert main(["discover", "list", "--json", "--reports", str(reports),
                 "-i", str(inv_file)]) == 0
    row = json.loads(capsys.readouterr().out)["reports"][0]
    assert (row["node"], row["by"], row["port"]) == ("tbox-003", "port", "sw1:3")
    assert main(args) == 0
    assert edit.entry_of(inv_file.read_text(), "tbox-003")["state"] == "burn-in"
    assert main(["discover", "accept", "--reports", str(reports), "-i", str(inv_file)]) == 2


@pytest.mark.parametrize("serial", ["TBP #1: {x}, 'q\"", "- [a]", "&anchor *alias !tag",
                                    "yes", "0x10", "null", "<script>"])
def test_a_hostile_but_printable_serial_is_quoted_and_reads_back_as_itself(
        serial: str) -> None:
    new, (o,) = run(without("tbox-003"), as_report(dmi=dict(GOOD["dmi"], serial=serial)))
    assert o.verdict == "accepted"
    assert edit.entry_of(new, "tbox-003")["serial"] == serial
    inv, _ = load(new, "inventory.yaml")
    assert inv.nodes["tbox-003"].serial == serial
    assert changed(without("tbox-003"), new)[0] == []
