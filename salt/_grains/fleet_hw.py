"""Salt grains of fleet's own (synced from file_roots' _grains by the highstate): the
hardware facts Salt's core grains lack, for `fleet status --hardware` and `fleet node show
--hardware` (tools/fleet/discover/drift.py compares them with the inventory):

- ``fleet_ib_guids``: each InfiniBand HCA's node GUID, as the inventory writes it
  (``0x1070fd0300106355``), from /sys/class/infiniband/*/node_guid;
- ``fleet_disk_serials``: each whole disk's serial, from its device's ``serial`` (NVMe)
  or udev's ID_SERIAL_SHORT (/run/udev/data/b<major>:<minor>).

Standard library only; reads sysfs and udev's database, changes nothing."""

from __future__ import annotations

import os

SYS = "/sys"
UDEV = "/run/udev/data"
SKIP = ("loop", "ram", "dm-", "md", "sr", "zram", "nbd")
MAX_ITEMS = 256


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read(256).strip() or None
    except OSError:
        return None


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))[:MAX_ITEMS]
    except OSError:
        return []


def ib_guids(sys_root: str = SYS) -> list[str]:
    out = []
    for hca in _listdir(os.path.join(sys_root, "class", "infiniband")):
        guid = _read(os.path.join(sys_root, "class", "infiniband", hca, "node_guid"))
        if guid and guid.replace(":", "").strip("0"):
            out.append("0x" + guid.replace(":", "").lower())
    return out


def _udev_serial(udev_root: str, dev: str | None) -> str | None:
    if not dev:
        return None
    try:
        with open(os.path.join(udev_root, f"b{dev}"), encoding="ascii",
                  errors="replace") as f:
            for line in f.read(65536).splitlines():
                if line.startswith("E:ID_SERIAL_SHORT="):
                    return line.split("=", 1)[1].strip() or None
    except OSError:
        return None
    return None


def disk_serials(sys_root: str = SYS, udev_root: str = UDEV) -> list[str]:
    out = []
    for disk in _listdir(os.path.join(sys_root, "block")):
        if disk.startswith(SKIP):
            continue
        base = os.path.join(sys_root, "block", disk)
        serial = _read(os.path.join(base, "device", "serial")) or _udev_serial(
            udev_root, _read(os.path.join(base, "dev")))
        if serial:
            out.append(serial)
    return out


def fleet_hw() -> dict[str, list[str]]:
    return {"fleet_ib_guids": ib_guids(), "fleet_disk_serials": disk_serials()}
