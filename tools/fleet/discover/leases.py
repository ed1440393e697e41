"""The master's dnsmasq leases file: which address it leased to which MAC. A report is
accepted only from the address leased to the MAC it is for.

Each line is ``<expiry epoch> <mac> <ip> <hostname|*> <client-id|*>`` (expiry 0: never);
dnsmasq rewrites the file whole, so a read sees one consistent version. Lines that are
not of this shape (the ``duid`` line of DHCPv6, a MAC of another hardware type) are
skipped; an expired lease does not count.
"""

from __future__ import annotations

import ipaddress
import time
from pathlib import Path

from fleet.inventory.netutil import normalize_mac

DEFAULT = Path("/var/lib/misc/dnsmasq.leases")
MAX_LEASES_BYTES = 8 * 1024 * 1024


def read(path: Path, now: float | None = None) -> dict[str, str]:
    """MAC -> the address leased to it now (the last line wins)."""
    now = time.time() if now is None else now
    try:
        with path.open("rb") as f:
            data = f.read(MAX_LEASES_BYTES + 1)
    except FileNotFoundError:
        return {}
    if len(data) > MAX_LEASES_BYTES:
        raise OSError(f"{path}: larger than {MAX_LEASES_BYTES} bytes")
    out: dict[str, str] = {}
    for line in data.decode("ascii", errors="replace").splitlines():
        cols = line.split()
        if len(cols) < 3 or not cols[0].isdigit():
            continue
        expiry = int(cols[0])
        if expiry and expiry < now:
            continue
        try:
            mac = normalize_mac(cols[1])
            address = str(ipaddress.IPv4Address(cols[2]))
        except ValueError:
            continue
        out[mac] = address
    return out


def leased(path: Path, mac: str, now: float | None = None) -> str | None:
    """The address leased to ``mac`` now, or None."""
    return read(path, now).get(mac)


def holders(path: Path, now: float | None = None) -> set[str]:
    """Every address leased now."""
    return set(read(path, now).values())
