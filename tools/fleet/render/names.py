"""The site's host names: one entry per addressed interface, shared by /etc/hosts (pillar)
and DNS (dnsmasq). The boot NIC carries the plain hostname; others get ``<host>-<nic>``."""

from __future__ import annotations

from collections.abc import Iterator
from ipaddress import IPv4Address

from fleet.inventory.model import Inventory


def host_names(inv: Inventory) -> Iterator[tuple[IPv4Address, str, str]]:
    """Yield ``(address, short name, fqdn)`` in inventory order."""
    domain = inv.raw.site.domain
    for node in inv.nodes.values():
        yield node.address, node.hostname, f"{node.hostname}.{domain}"
        for name, iface in node.interfaces.items():
            if name == node.boot_nic or iface.address is None:
                continue
            short = f"{node.hostname}-{name}"
            yield iface.address, short, f"{short}.{domain}"
