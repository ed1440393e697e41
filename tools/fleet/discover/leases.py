"""The master's dnsmasq leases file: which address it leased to which MAC. A report is
accepted only from the address leased to the MAC it is for.

Each line is ``<expiry epoch> <mac> <ip> <hostname|*> <client-id|*>`` (expiry 0: never);
dnsmasq rewrites the file whole, so a read sees one consistent version. Lines that are
not of this shape (the ``duid`` line of DHCPv6, a MAC of another hardware type) are
skipped; an expired lease does not count.
"""

from __future__ import annotations

import ipaddress
import os
import threading
import time
from pathlib import Path

from fleet.inventory.netutil import normalize_mac

DEFAULT = Path("/var/lib/misc/dnsmasq.leases")
MAX_LEASES_BYTES = 8 * 1024 * 1024


# the last parse of each file, by its (mtime, size): the endpoint's door asks for every
# connection, and a flood must not reread a large file each time
_CACHE: dict[Path, tuple[tuple[int, int], list[tuple[int, str, str]]]] = {}
_LOCK = threading.Lock()


def _parse(data: bytes) -> list[tuple[int, str, str]]:
    out = []
    for line in data.decode("ascii", errors="replace").splitlines():
        cols = line.split()
        if len(cols) < 3 or not cols[0].isdigit():
            continue
        try:
            out.append((int(cols[0]), normalize_mac(cols[1]),
                        str(ipaddress.IPv4Address(cols[2]))))
        except ValueError:
            continue
    return out


def _entries(path: Path) -> list[tuple[int, str, str]]:
    try:
        with path.open("rb") as f:
            st = os.fstat(f.fileno())
            key = (st.st_mtime_ns, st.st_size)
            with _LOCK:
                hit = _CACHE.get(path)
            if hit is not None and hit[0] == key:
                return hit[1]
            data = f.read(MAX_LEASES_BYTES + 1)
    except FileNotFoundError:
        return []
    if len(data) > MAX_LEASES_BYTES:
        raise OSError(f"{path}: larger than {MAX_LEASES_BYTES} bytes")
    entries = _parse(data)
    with _LOCK:
        _CACHE[path] = (key, entries)
    return entries


def read(path: Path, now: float | None = None) -> dict[str, str]:
    """MAC -> the address leased to it now (the last line wins)."""
    now = time.time() if now is None else now
    return {mac: address for expiry, mac, address in _entries(path)
            if not expiry or expiry >= now}


def leased(path: Path, mac: str, now: float | None = None) -> str | None:
    """The address leased to ``mac`` now, or None."""
    return read(path, now).get(mac)


def holders(path: Path, now: float | None = None) -> set[str]:
    """Every address leased now."""
    return set(read(path, now).values())
