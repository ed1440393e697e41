"""The discovery report is hostile input: malformed, oversized and escape-laden reports
are refused with a reason, and what passes is shown escaped."""

from __future__ import annotations

import json

import pytest

from discover.reports import BOOT_MAC, GOOD, body, report
from fleet.discover.report import MAX_REPORT_BYTES, Report, ReportError, parse
from fleet.master.text import shown


def test_a_good_report_parses_and_normalises_macs() -> None:
    doc = report(boot_mac=BOOT_MAC.upper().replace(":", "-"))
    doc["nics"][0]["mac"] = doc["boot_mac"]
    r = parse(body(doc))
    assert isinstance(r, Report) and r.boot_mac == BOOT_MAC
    assert r.boot_nic() is not None and r.gpus() == 8
    assert r.hca_guids() == ["0x1070fd0300aa0001"]


@pytest.mark.parametrize(("raw", "why"), [
    (b"", "not JSON"),
    (b"{", "not JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b'{"version": 1, "version": 1}', "duplicate key"),
    (b'{"version": NaN}', "NaN is not a number"),
    (b"[" * 50 + b"]" * 50, "nested deeper"),
    (b"[]", "report"),
])
def test_malformed_documents_are_refused_with_the_reason(raw: bytes, why: str) -> None:
    with pytest.raises(ReportError, match=why):
        parse(raw)


@pytest.mark.parametrize(("changes", "where"), [
    ({"version": 2}, "version"),
    ({"version": "1"}, "version"),  # strict: no coercion
    ({"boot_mac": "01:00:5e:00:00:01"}, "boot_mac"),  # multicast
    ({"boot_mac": "ff:ff:ff:ff:ff:ff"}, "boot_mac"),
    ({"boot_mac": "0c:42:a1:aa:00:01; reboot"}, "boot_mac"),
    ({"dmi": None}, "dmi"),
    ({"nics": []}, "nics"),
    ({"extra": "key"}, "extra"),
    ({"cpus": {"model": "x", "sockets": 0, "cores_per_socket": 1}}, "cpus.sockets"),
    ({"cpus": {"model": "x", "sockets": True, "cores_per_socket": 1}}, "cpus.sockets"),
    ({"bmc_mac": 12}, "bmc_mac"),
    ({"boot_mac": "0c:42:a1:aa:00:55"}, "none of the nics"),
])
def test_schema_violations_name_the_field(changes: dict[str, object], where: str) -> None:
    with pytest.raises(ReportError, match=where.replace(".", r"\.")):
        parse(body(report(**changes)))


def test_a_wrong_guid_or_pci_slot_is_refused() -> None:
    doc = report()
    doc["pci"][-1]["guid"] = "0x1070FD03$(reboot)"
    with pytest.raises(ReportError, match=r"pci\.8\.guid"):
        parse(body(doc))
    doc = report()
    doc["pci"][0]["slot"] = "../../etc"
    with pytest.raises(ReportError, match=r"pci\.0\.slot"):
        parse(body(doc))


def test_oversized_reports_and_lists_are_refused() -> None:
    with pytest.raises(ReportError, match=f"at most {MAX_REPORT_BYTES}"):
        parse(b" " * (MAX_REPORT_BYTES + 1))
    doc = report(nics=[dict(GOOD["nics"][1], name=f"eth{i}") for i in range(65)])
    with pytest.raises(ReportError, match="nics"):
        parse(body(doc))
    doc = report()
    doc["dmi"]["serial"] = "S" * 65
    with pytest.raises(ReportError, match=r"dmi\.serial"):
        parse(body(doc))


@pytest.mark.parametrize("bad", ["\x1b[2J\x1b[31mOWNED", "TBP\nroot:x:0:0", "ab\u202ecd",
                                 "nul\x00", "\x9b31m"])
def test_control_characters_are_refused_anywhere(bad: str) -> None:
    doc = report()
    doc["dmi"]["serial"] = bad
    with pytest.raises(ReportError, match=r"dmi\.serial"):
        parse(body(doc))
    doc = report()
    doc["nics"][0]["lldp"]["port_descr"] = bad
    with pytest.raises(ReportError, match=r"nics\.0\.lldp\.port_descr"):
        parse(body(doc))


def test_printable_but_hostile_text_passes_and_is_shown_escaped() -> None:
    doc = report()
    doc["dmi"]["product"] = "<script>alert(1)</script> $(reboot) `id` 'q\" \\ Ü"
    r = parse(body(doc))
    text = shown(r.dmi.product)
    assert text == "<script>alert(1)</script> $(reboot) `id` 'q\" \\\\ \\xdc"
    assert all(" " <= c <= "~" for c in text)
    # and as JSON the same text is escaped by the encoder, never raw
    assert "\\u00dc" in json.dumps(r.model_dump(mode="json"))


def test_shown_bounds_what_it_shows() -> None:
    assert shown("x" * 500, 10) == "x" * 10 + "..."
    assert shown("\x1b") == "\\x1b"
