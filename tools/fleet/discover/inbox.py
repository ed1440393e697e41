"""The discovery route of the master's endpoint (fleet.reinstall.server):
``POST /v1/discover/<mac>``, the body a report (fleet.discover.report).

Let in at the door only from an address dnsmasq leased now (the commissioning pool), and
accepted only when the caller's address is the one leased to ``<mac>`` and the report is
for that MAC: no machine can file a report for another. The answer is one line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fleet.discover import leases, store
from fleet.discover.report import MAX_REPORT_BYTES, ReportError, parse

PATH = re.compile(r"^/v1/discover/([0-9a-f]{2}(?:-[0-9a-f]{2}){5})$")
MAX_BODY = MAX_REPORT_BYTES


@dataclass(frozen=True, slots=True)
class Inbox:
    leases: Path  # dnsmasq's leases file
    root: Path  # where reports are kept (store.py)

    def admits(self, peer: str) -> bool:
        """The door: ``peer`` holds a lease now."""
        try:
            return peer in leases.holders(self.leases)
        except OSError:
            return False

    def receive(self, hexhyp_mac: str, peer: str, body: bytes) -> tuple[int, str]:
        """(HTTP code, one line) for a report of ``hexhyp_mac`` from ``peer``."""
        mac = hexhyp_mac.replace("-", ":")
        try:
            leased = leases.leased(self.leases, mac)
        except OSError:
            return 503, "unavailable: the leases file cannot be read"
        if leased is None:
            return 403, f"refused: no lease for {mac}"
        if leased != peer:
            return 403, f"refused: {mac} was leased another address, not {peer}"
        try:
            report = parse(body)
            if report.boot_mac != mac:
                raise ReportError(f"boot_mac {report.boot_mac} is not {mac}")
            store.save(self.root, report, peer)
        except ReportError as exc:
            return 422, f"refused: {exc}"
        return 200, f"ok: report for {mac} kept"
