"""The master's endpoint taking commissioning reports, served for real on loopback, for
the tests that run the commissioning script or image against it."""

from __future__ import annotations

import time
from pathlib import Path

from fleet.discover.inbox import Inbox
from fleet.reinstall.server import CallbackServer
from reinstall.helpers import RecordingBootMode


def commission_endpoint(tmp_path: Path, mac: str, address: str, timeout: float
                        ) -> tuple[CallbackServer, Path]:
    """A started endpoint that takes the report of ``mac`` from ``address`` (leased to it
    for the next hour), and the directory it keeps reports in; the caller stops it."""
    leases = tmp_path / "dnsmasq.leases"
    leases.write_text(f"{int(time.time()) + 3600} {mac} {address} * *\n")
    reports = tmp_path / "reports"
    server = CallbackServer(("127.0.0.1", 0), tmp_path / "state", RecordingBootMode(), {},
                            timeout=timeout, inbox=Inbox(leases, reports)).start()
    return server, reports
