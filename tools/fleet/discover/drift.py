"""Hardware facts read later from a running node against the inventory and its profile:
a missing DIMM (less memory), a missing GPU, another CPU count, a swapped board (serial,
boot MAC), a changed HCA GUID, a swapped boot disk (its serial). Pure: the facts come from
elsewhere (:func:`from_grains`: Salt grains, the minion's own word; fleet.bmc.facts: the
BMC's Redfish answer; both untrusted and bounded), and each drift carries both values.

A fact the source does not tell is ``None`` and is not compared (grains have no HCA GUID or
disk serial unless the fleet grain gives them: ``fleet_ib_guids``, ``fleet_disk_serials``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleet.inventory.model import Node
from fleet.inventory.netutil import normalize_mac
from fleet.master.text import shown

# the OS sees less memory than is installed (firmware and kernel reserve some): less than
# this share of the profile's memory is a drift (one DIMM of 12 is 8%)
MEMORY_SHARE = 0.95
MAX_ITEMS = 256  # MACs, GUIDs, disk serials, GPUs taken from one node at most


@dataclass(frozen=True, slots=True)
class Facts:
    serial: str | None = None
    macs: frozenset[str] | None = None  # every NIC's MAC, normalised
    memory_mb: int | None = None
    gpus: int | None = None
    cpu_sockets: int | None = None
    cores_per_socket: int | None = None
    ib_guids: frozenset[str] | None = None  # lower case, 0x...
    disk_serials: frozenset[str] | None = None
    bmc_mac: str | None = None  # the BMC's own NIC, normalised (only a BMC tells it)
    disks: int | None = None  # the drives present (a BMC's Storage)


@dataclass(frozen=True, slots=True)
class Drift:
    # serial, mac, bmc_mac, memory, gpus, cpu_sockets, cores_per_socket, disks, ib_guid,
    # boot_disk
    fact: str
    inventory: str  # what the inventory (or its profile) says
    found: str  # what the node says, escaped

    @property
    def text(self) -> str:
        return f"{self.fact}: inventory {self.inventory}, found {self.found}"

    def as_json(self) -> dict[str, str]:
        return {"fact": self.fact, "inventory": self.inventory, "found": self.found}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None


def _strings(value: Any) -> list[str]:
    items = value if isinstance(value, list) else []
    return [v for v in items[:MAX_ITEMS] if isinstance(v, str)]


def _macs(value: Any) -> frozenset[str] | None:
    if not isinstance(value, dict):
        return None
    out = set()
    for mac in list(value.values())[:MAX_ITEMS]:
        try:
            m = normalize_mac(mac)
        except ValueError:
            continue
        if m != "00:00:00:00:00:00":  # lo
            out.add(m)
    return frozenset(out)


def from_grains(grains: Mapping[str, Any]) -> Facts:
    """The facts Salt's core grains (and the fleet grain's, where present) give."""
    gpus = grains.get("num_gpus")
    serial = grains.get("serialnumber")
    guids = grains.get("fleet_ib_guids")
    disks = grains.get("fleet_disk_serials")
    return Facts(
        serial=serial[:200] if isinstance(serial, str) and serial.strip() else None,
        macs=_macs(grains.get("hwaddr_interfaces")),
        memory_mb=_int(grains.get("mem_total")),
        gpus=_int(gpus) if "num_gpus" in grains else None,
        cpu_sockets=None, cores_per_socket=None,
        ib_guids=None if guids is None else frozenset(g.lower() for g in _strings(guids)),
        disk_serials=None if disks is None else frozenset(_strings(disks)))


def compare(node: Node, facts: Facts) -> list[Drift]:
    """Every fact of ``node`` (its entry and its profile) the node's own facts contradict."""
    out: list[Drift] = []
    prof = node.profile
    if facts.serial is not None and node.serial and \
            facts.serial.strip().lower() != str(node.serial).lower():
        out.append(Drift("serial", str(node.serial), shown(facts.serial, 64)))
    if facts.macs is not None and node.mac and normalize_mac(node.mac) not in facts.macs:
        found = ", ".join(sorted(facts.macs)[:8]) or "no NIC"
        out.append(Drift("mac", normalize_mac(node.mac), f"not among {found}"))
    if facts.bmc_mac is not None and node.bmc_mac and \
            normalize_mac(node.bmc_mac) != facts.bmc_mac:
        out.append(Drift("bmc_mac", normalize_mac(node.bmc_mac), shown(facts.bmc_mac, 40)))
    if facts.memory_mb is not None and facts.memory_mb < prof.memory_gb * 1024 * MEMORY_SHARE:
        out.append(Drift("memory", f"{prof.memory_gb} GB (profile {node.profile_name})",
                         f"{facts.memory_mb / 1024:.0f} GB"))
    want_gpus = prof.gpu.count if prof.gpu is not None else 0
    if facts.gpus is not None and facts.gpus != want_gpus:
        out.append(Drift("gpus", f"{want_gpus} (profile {node.profile_name})",
                         str(facts.gpus)))
    for fact, want, got in (("cpu_sockets", prof.cpu.sockets, facts.cpu_sockets),
                            ("cores_per_socket", prof.cpu.cores_per_socket,
                             facts.cores_per_socket)):
        if got is not None and got != want:
            out.append(Drift(fact, f"{want} (profile {node.profile_name})", str(got)))
    if facts.ib_guids is not None and node.ib_guid and \
            str(node.ib_guid).lower() not in facts.ib_guids:
        found = ", ".join(shown(g, 40) for g in sorted(facts.ib_guids)[:8]) or "no HCA"
        out.append(Drift("ib_guid", str(node.ib_guid), f"not among {found}"))
    want_disks = sum(d.count for d in prof.disks)
    if facts.disks is not None and facts.disks < want_disks:  # more: a USB stick, a spare
        out.append(Drift("disks", f"{want_disks} (profile {node.profile_name})",
                         str(facts.disks)))
    boot = node.boot_disk.serial if node.boot_disk is not None else None
    if facts.disk_serials is not None and boot and boot not in facts.disk_serials:
        found = ", ".join(shown(s, 40) for s in sorted(facts.disk_serials)[:8]) or "no disk"
        out.append(Drift("boot_disk", f"serial {boot}", f"not among {found}"))
    return out
