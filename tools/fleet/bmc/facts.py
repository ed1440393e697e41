"""A node's hardware facts as its BMC tells them over Redfish: the system's serial and
model, its NICs' MACs, its DIMMs (count and size), its CPUs and GPUs (Processors), its
drives' serials (Storage), the BMC's own MAC and firmware versions (Manager,
UpdateService's FirmwareInventory). Compared with the inventory by the one comparison,
fleet.discover.drift (the grains feed it too).

The answer is hostile: every value is taken only with its type (a string, a number not a
bool, a list, an object), cut to a length, and each collection to MAX_MEMBERS members;
what is shown goes through fleet.master.text. A resource a BMC does not have (HTTP 404,
no link, a body of another shape) leaves its fact unknown (None: not compared) and is
named in ``unread``; a BMC that does not answer, or refuses the credentials, fails the
whole read (BmcError). All the requests share the client's one call deadline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleet.bmc.base import BmcProtocolError
from fleet.bmc.redfish import JSON, RedfishClient
from fleet.discover.drift import Facts, compare
from fleet.inventory.model import Node
from fleet.inventory.netutil import normalize_mac
from fleet.master.text import clean, shown

MAX_MEMBERS = 64  # members of one collection read (a GPU server: 32 DIMMs, 24 drives)
MAX_FIRMWARE = 32  # firmware inventory entries read
TEXT = 64  # characters kept of one text value (serial, model, version)


@dataclass(frozen=True)
class Observed:
    """What the BMC said: ``facts`` for the comparison, the rest shown beside them."""

    facts: Facts
    model: str | None = None
    dimms: int | None = None  # DIMMs present
    firmware: dict[str, str] = field(default_factory=dict)  # component -> version
    unread: tuple[str, ...] = ()  # resources it does not have (their facts: unknown)

    def as_json(self) -> dict[str, Any]:
        """Every text escaped (fleet.master.text.shown): the document is shown as it is."""
        f = self.facts

        def esc(v: str | None) -> str | None:
            return None if v is None else shown(v, TEXT)

        return {"serial": esc(f.serial), "model": esc(self.model),
                "macs": None if f.macs is None else sorted(f.macs),
                "bmc_mac": f.bmc_mac, "memory_mb": f.memory_mb, "dimms": self.dimms,
                "cpu_sockets": f.cpu_sockets, "cores_per_socket": f.cores_per_socket,
                "gpus": f.gpus,
                "disks": f.disks,
                "disk_serials": None if f.disk_serials is None else
                [shown(s, TEXT) for s in sorted(f.disk_serials)],
                "firmware": {k: shown(v, TEXT) for k, v in self.firmware.items()},
                "unread": list(self.unread)}


def _text(value: Any) -> str | None:
    """A string value, bounded; None for anything else or an empty one. Kept as sent (the
    comparison shows it escaped), but never longer than TEXT."""
    return value.strip()[:TEXT] if isinstance(value, str) and value.strip() else None


def _num(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok and 0 <= value < 1 << 40 else None


def _link(value: Any) -> str | None:
    """``{"@odata.id": "/path"}``'s path, else None."""
    link = value.get("@odata.id") if isinstance(value, dict) else None
    return link if isinstance(link, str) and 0 < len(link) <= 512 else None


def _mac(value: Any) -> str | None:
    try:
        m = normalize_mac(value)
    except ValueError:
        return None
    return None if m == "00:00:00:00:00:00" else m


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _absent(body: JSON) -> bool:
    status = body.get("Status")
    return isinstance(status, dict) and status.get("State") == "Absent"


class _Reader:
    def __init__(self, client: RedfishClient) -> None:
        self.client = client
        self.unread: list[str] = []

    def get(self, link: str | None, what: str) -> JSON | None:
        """The resource, or None (named in unread) where the BMC has none."""
        if link is None:
            self.unread.append(what)
            return None
        try:
            return self.client.get(link)
        except BmcProtocolError as exc:  # 404, a link elsewhere, too big: not this fact
            self.unread.append(f"{what} ({exc})")
            return None

    def members(self, link: str | None, what: str) -> list[JSON] | None:
        """The members of a collection, each read; None where there is no collection."""
        coll = self.get(link, what)
        if coll is None:
            return None
        items = coll.get("Members")
        if not isinstance(items, list):
            self.unread.append(f"{what} (no Members list)")
            return None
        out = []
        for m in items[:MAX_MEMBERS]:
            body = self.get(_link(m), f"{what} member")
            if body is not None:
                out.append(body)
        return out


def read(client: RedfishClient) -> Observed:
    """Every fact the BMC has, in one call (the client's call deadline)."""
    with client.deadline.call():
        return _read(_Reader(client))


def _read(r: _Reader) -> Observed:
    system = r.client.get(r.client.system_path())
    macs = _nic_macs(r, system)
    memory_mb, dimms = _memory(r, system)
    sockets, cores, gpus = _processors(r, system)
    manager = _manager(r, system)
    firmware = _firmware(r, system, manager)
    bmc_mac = None
    if manager is not None:
        nics = r.members(_link(manager.get("EthernetInterfaces")), "Manager EthernetInterfaces")
        found = [m for n in nics or [] if (m := _mac(n.get("PermanentMACAddress"))
                                          or _mac(n.get("MACAddress")))]
        bmc_mac = found[0] if len(found) == 1 else None  # several: which one is not said
    serials, disks = _drives(r, system)
    facts = Facts(serial=_text(system.get("SerialNumber")), macs=macs, memory_mb=memory_mb,
                  gpus=gpus, cpu_sockets=sockets, cores_per_socket=cores,
                  disk_serials=serials, bmc_mac=bmc_mac, disks=disks)
    return Observed(facts, model=_text(system.get("Model")), dimms=dimms, firmware=firmware,
                    unread=tuple(clean(u, 300) for u in r.unread[:MAX_MEMBERS]))


def _nic_macs(r: _Reader, system: JSON) -> frozenset[str] | None:
    nics = r.members(_link(system.get("EthernetInterfaces")), "EthernetInterfaces")
    if nics is None:
        return None
    return frozenset(m for n in nics for k in ("PermanentMACAddress", "MACAddress")
                     if (m := _mac(n.get(k))) is not None)


def _memory(r: _Reader, system: JSON) -> tuple[int | None, int | None]:
    """The installed memory in MB and the DIMMs present: from the Memory collection, else
    MemorySummary's total (no DIMM count)."""
    dimms = r.members(_link(system.get("Memory")), "Memory")
    present = [d for d in dimms or [] if not _absent(d) and (_num(d.get("CapacityMiB")) or 0) > 0]
    if present:
        return int(sum(_num(d["CapacityMiB"]) or 0 for d in present)), len(present)
    summary = system.get("MemorySummary")
    gib = _num(summary.get("TotalSystemMemoryGiB")) if isinstance(summary, dict) else None
    return (None if gib is None else int(gib * 1024)), (0 if dimms == [] else None)


def _processors(r: _Reader, system: JSON) -> tuple[int | None, int | None, int | None]:
    """CPU sockets, cores of one socket, GPUs. A BMC that lists no GPU among its
    Processors may simply not list them: then GPUs are unknown, not 0."""
    procs = r.members(_link(system.get("Processors")), "Processors")
    summary = system.get("ProcessorSummary")
    count = _num(summary.get("Count")) if isinstance(summary, dict) else None
    if procs is None:
        return (None if count is None else int(count)), None, None
    live = [p for p in procs if not _absent(p)]
    cpus = [p for p in live if p.get("ProcessorType") == "CPU"]
    gpus = [p for p in live if p.get("ProcessorType") == "GPU"]
    cores = {int(c) for p in cpus if (c := _num(p.get("TotalCores"))) is not None}
    return (len(cpus) if cpus else None if count is None else int(count),
            cores.pop() if len(cores) == 1 else None, len(gpus) if gpus else None)


def _drives(r: _Reader, system: JSON) -> tuple[frozenset[str] | None, int | None]:
    """Every drive's serial under Storage (SimpleStorage's devices carry none), and how
    many drives are present."""
    controllers = r.members(_link(system.get("Storage")), "Storage")
    if controllers is None:
        return None, None
    serials: set[str] = set()
    present = 0
    links = [link for c in controllers for d in _list(c.get("Drives"))
             if (link := _link(d)) is not None]
    for link in links[:MAX_MEMBERS]:
        drive = r.get(link, "Drive")
        if drive is None or _absent(drive):
            continue
        present += 1
        if (s := _text(drive.get("SerialNumber"))) is not None:
            serials.add(s)
    return frozenset(serials), present


def _manager(r: _Reader, system: JSON) -> JSON | None:
    links = system.get("Links")
    managed = links.get("ManagedBy") if isinstance(links, dict) else None
    first = managed[0] if isinstance(managed, list) and managed else None
    return r.get(_link(first), "Manager")


def _firmware(r: _Reader, system: JSON, manager: JSON | None) -> dict[str, str]:
    """Component -> version: the BIOS, the BMC, and the firmware inventory's entries."""
    out: dict[str, str] = {}
    if (v := _text(system.get("BiosVersion"))) is not None:
        out["BIOS"] = v
    if manager is not None and (v := _text(manager.get("FirmwareVersion"))) is not None:
        out["BMC"] = v
    service = r.get("/redfish/v1/UpdateService", "UpdateService")
    inventory = _link(service.get("FirmwareInventory")) if service is not None else None
    if inventory is None:
        return out
    coll = r.get(inventory, "FirmwareInventory")
    items = coll.get("Members") if coll is not None else None
    for m in (items if isinstance(items, list) else [])[:MAX_FIRMWARE]:
        entry = r.get(_link(m), "FirmwareInventory member")
        if entry is None:
            continue
        name = _text(entry.get("Name")) or _text(entry.get("Id"))
        version = _text(entry.get("Version"))
        if name is not None and version is not None and len(out) < MAX_FIRMWARE:
            out.setdefault(clean(name, TEXT), version)
    return out


def rows(node: Node, seen: Observed) -> list[dict[str, Any]]:
    """Every fact side by side: the inventory's (or its profile's) value, the BMC's
    (escaped; None: it does not tell), and the comparison's verdict (drift.compare: the
    one judge)."""
    f, prof = seen.facts, node.profile
    drifted = {d.fact for d in compare(node, f)}
    boot = node.boot_disk.serial if node.boot_disk is not None else None
    gpus = prof.gpu.count if prof.gpu is not None else 0
    out = [
        ("serial", str(node.serial), None if f.serial is None else shown(f.serial, TEXT)),
        ("mac", normalize_mac(node.mac), None if f.macs is None else
         ", ".join(sorted(f.macs)[:8]) or "no NIC"),
        ("bmc_mac", normalize_mac(node.bmc_mac), f.bmc_mac),
        ("memory", f"{prof.memory_gb} GB", None if f.memory_mb is None else
         f"{f.memory_mb / 1024:.0f} GB" + ("" if seen.dimms is None else
                                           f" in {seen.dimms} DIMM(s)")),
        ("cpu_sockets", str(prof.cpu.sockets), _opt(f.cpu_sockets)),
        ("cores_per_socket", str(prof.cpu.cores_per_socket), _opt(f.cores_per_socket)),
        ("gpus", str(gpus), _opt(f.gpus)),
        ("disks", str(sum(d.count for d in prof.disks)), _opt(f.disks)),
        ("boot_disk", f"serial {boot}" if boot else None, None if f.disk_serials is None else
         ", ".join(shown(s, 40) for s in sorted(f.disk_serials)[:8]) or "no disk"),
        ("model", str(prof.model), None if seen.model is None else shown(seen.model, TEXT)),
    ]
    return [{"fact": fact, "inventory": inv, "bmc": bmc, "drift": fact in drifted}
            for fact, inv, bmc in out]


def _opt(value: int | None) -> str | None:
    return None if value is None else str(value)
