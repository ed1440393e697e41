"""Each report matched to a planned machine: first by the switch port the boot NIC's LLDP
neighbour names (against the inventory's port plan), then by the serial, then by the BMC
MAC the inventory already has; otherwise unmatched. Two machines heard on one port match
neither: the port is named as the conflict."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from fleet.cabling.compare import where
from fleet.cabling.lldp import Neighbour
from fleet.discover.plan import Planned
from fleet.discover.report import Report

By = Literal["port", "serial", "bmc_mac"]


@dataclass(frozen=True, slots=True)
class Match:
    mac: str  # the report's boot MAC
    report: Report
    node: str | None
    by: By | None
    port: tuple[str, int] | None  # where its boot NIC is plugged in, as LLDP says
    problems: list[str] = field(default_factory=list)


def seen_port(report: Report, switches: list[str]) -> tuple[str, int] | None:
    """The inventory switch and port the boot NIC's LLDP neighbour names, if any."""
    nic = report.boot_nic()
    if nic is None or nic.lldp is None:
        return None
    lldp = nic.lldp
    n = Neighbour(nic.name, lldp.chassis_name, lldp.chassis_id, lldp.port_id,
                  lldp.port_id_type, lldp.port_descr)
    return where(n, switches)


def match_all(reports: Mapping[str, Report], plan: Mapping[str, Planned],
              switches: list[str]) -> list[Match]:
    """One match per report, by MAC."""
    by_port = {p.port: p.hostname for p in plan.values() if p.port is not None}
    by_serial = {p.serial.lower(): p.hostname for p in plan.values() if p.serial}
    by_bmc = {p.bmc_mac: p.hostname for p in plan.values() if p.bmc_mac}
    ports = {mac: seen_port(r, switches) for mac, r in reports.items()}
    crowded = Counter(p for p in ports.values() if p is not None)
    out = []
    for mac, r in sorted(reports.items()):
        port = ports[mac]
        problems: list[str] = []
        node: str | None = None
        by: By | None = None
        if port is not None and crowded[port] > 1:
            others = sorted(m for m, p in ports.items() if p == port and m != mac)
            problems.append(f"two machines on {port[0]} port {port[1]}: also "
                            + ", ".join(others))
        elif port is not None and port in by_port:
            node, by = by_port[port], "port"
        if node is None and not problems:
            if r.dmi.serial.lower() in by_serial:
                node, by = by_serial[r.dmi.serial.lower()], "serial"
            elif r.bmc_mac is not None and r.bmc_mac in by_bmc:
                node, by = by_bmc[r.bmc_mac], "bmc_mac"
        out.append(Match(mac, r, node, by, port, problems))
    return out
