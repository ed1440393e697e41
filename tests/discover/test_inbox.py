"""The discovery route of the master's endpoint, served for real on loopback: a report is
taken only from the address dnsmasq leased to its MAC (a real leases file in dnsmasq's
format), and every other caller is refused before anything is kept."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from discover.reports import BOOT_MAC, body, report
from fleet.discover import leases, store
from fleet.discover.inbox import Inbox
from fleet.inventory.netutil import hexhyp
from fleet.reinstall.server import CallbackServer
from reinstall.helpers import RecordingBootMode
from support.httpreq import http

LEASED, OTHER, UNLEASED = "127.0.0.5", "127.0.0.6", "127.0.0.7"
OTHER_MAC = "0c:42:a1:aa:00:99"


@dataclass
class Served:
    server: CallbackServer
    root: Path
    leases: Path

    def post(self, raw: bytes, source: str, mac: str = BOOT_MAC) -> tuple[int, bytes]:
        return http("POST", f"{self.server.url}/v1/discover/{hexhyp(mac)}", None, raw,
                    source=source)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    lease_file = tmp_path / "dnsmasq.leases"
    until = int(time.time()) + 3600
    lease_file.write_text(f"{until} {BOOT_MAC} {LEASED} * 01:{BOOT_MAC}\n"
                          f"{until} {OTHER_MAC} {OTHER} * *\n"
                          f"{int(time.time()) - 10} 0c:42:a1:aa:00:77 {UNLEASED} * *\n"
                          "duid 00:01:00:01\n")
    root = tmp_path / "reports"
    server = CallbackServer(("127.0.0.1", 0), tmp_path / "state", RecordingBootMode(), {},
                            per_address=4, timeout=1.0,
                            inbox=Inbox(lease_file, root)).start()
    yield Served(server, root, lease_file)
    server.stop()


def test_the_leases_file_is_read_as_dnsmasq_writes_it(served: Served) -> None:
    got = leases.read(served.leases)
    assert got == {BOOT_MAC: LEASED, OTHER_MAC: OTHER}  # the expired one does not count


def test_a_report_from_the_leased_address_is_kept_0600(served: Served) -> None:
    status, text = served.post(body(report()), LEASED)
    assert (status, text) == (200, f"ok: report for {BOOT_MAC} kept\n".encode())
    kept = store.path_of(served.root, BOOT_MAC)
    assert kept.stat().st_mode & 0o777 == 0o600
    got = store.load_all(served.root)[BOOT_MAC]
    assert isinstance(got, store.Received) and got.peer == LEASED
    assert got.report.dmi.serial == "TBPNEW0001"


def test_a_forged_report_from_another_leased_address_is_refused(served: Served) -> None:
    status, text = served.post(body(report()), OTHER)
    assert status == 403 and b"leased another address" in text
    assert not served.root.exists()


def test_an_address_with_no_lease_is_turned_away_at_the_door(served: Served) -> None:
    for source in (UNLEASED, "127.0.0.9"):
        status, text = served.post(body(report()), source)
        assert status == 403 and b"refused" in text
    assert not served.root.exists()


def test_a_report_for_another_mac_than_its_path_is_refused(served: Served) -> None:
    status, text = served.post(body(report()), OTHER, mac=OTHER_MAC)
    assert status == 422 and f"boot_mac {BOOT_MAC} is not {OTHER_MAC}".encode() in text


def test_malformed_and_oversized_bodies_are_refused_unkept(served: Served) -> None:
    status, text = served.post(b"{not json", LEASED)
    assert status == 422 and text.startswith(b"refused: not JSON")
    status, _ = served.post(b"x" * (300 * 1024), LEASED)
    assert status == 413
    doc = report()
    doc["dmi"]["serial"] = "\x1b]0;pwned\x07"
    status, text = served.post(body(doc), LEASED)
    assert status == 422 and b"dmi.serial" in text and b"\x1b" not in text
    assert not served.root.exists()


def test_only_post_on_a_well_formed_mac_path(served: Served) -> None:
    status, _ = http("GET", f"{served.server.url}/v1/discover/{hexhyp(BOOT_MAC)}", None,
                     source=LEASED)
    assert status == 404
    status, _ = http("POST", f"{served.server.url}/v1/discover/..%2f..%2fetc", None, b"{}",
                     source=LEASED)
    assert status == 404


def test_a_changed_leases_file_is_read_again(served: Served) -> None:
    assert leases.leased(served.leases, BOOT_MAC) == LEASED
    served.leases.write_text(f"{int(time.time()) + 3600} {BOOT_MAC} {OTHER} * * \n")
    assert leases.leased(served.leases, BOOT_MAC) == OTHER
    status, _ = served.post(body(report()), LEASED)
    assert status == 403  # the door: LEASED holds no lease any more
