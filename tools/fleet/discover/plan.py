"""The inventory as discovery sees it: every machine of every node group with its planned
boot-NIC switch port (the one derivation, fleet.inventory.expand), whether or not it has an
entry under ``nodes:`` yet.

A machine still being planned may have no entry: its serial and MACs are what discovery is
for. The loader refuses such a file (``missing_node``), so here each machine without an entry
gets a stand-in entry (``state: planned``, a locally administered MAC that no NIC has, serial
``undiscovered-<host>``) for the expansion only; it is marked ``entered = False`` and its
facts count for nothing (no match, no conflict).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from fleet.inventory.expand import expand_hosts
from fleet.inventory.load import parse
from fleet.inventory.model import Inventory
from fleet.inventory.netutil import normalize_mac
from fleet.problems import InventoryError

STUB_SERIAL = "undiscovered-"


@dataclass(frozen=True, slots=True)
class Planned:
    hostname: str
    group: str
    profile: str
    state: str
    entered: bool  # has an entry under nodes: (its facts below are real)
    port: tuple[str, int] | None  # the boot NIC's planned switch and port
    serial: str | None
    mac: str | None
    bmc_mac: str | None
    ib_guid: str | None


def _stub_mac(prefix: int, i: int) -> str:
    return f"{prefix:02x}:fd:00:{i >> 16 & 255:02x}:{i >> 8 & 255:02x}:{i & 255:02x}"


def _missing(doc: dict[str, Any]) -> list[str]:
    nodes = doc.get("nodes") or {}
    out = []
    for group in (doc.get("node_groups") or {}).values():
        if isinstance(group, dict) and isinstance(group.get("hosts"), str):
            out += [h for h, _ in expand_hosts(group["hosts"]) if h not in nodes]
    return out


def load(text: str, file: str) -> tuple[Inventory, dict[str, Planned]]:
    """The validated inventory (with stand-ins) and every planned machine by name; an
    InventoryError for anything but missing entries."""
    try:
        inv = parse(text, file)
        stubs: set[str] = set()
    except InventoryError as exc:
        if any(p.code != "missing_node" for p in exc.problems):
            raise
        doc = yaml.safe_load(text)
        stubs = set(_missing(doc))
        for i, host in enumerate(sorted(stubs)):
            doc.setdefault("nodes", {})[host] = {
                "state": "planned", "serial": STUB_SERIAL + host,
                "mac": _stub_mac(0x02, i), "bmc_mac": _stub_mac(0x06, i)}
        inv = parse(yaml.safe_dump(doc, sort_keys=False), file)
    return inv, _planned(inv, stubs)


def of(inv: Inventory) -> dict[str, Planned]:
    """Every node of a loaded inventory (each with an entry) as discovery sees it."""
    return _planned(inv, set())


def _planned(inv: Inventory, stubs: set[str]) -> dict[str, Planned]:
    out = {}
    for host, n in inv.nodes.items():
        real = host not in stubs
        prov = n.prov
        port = (prov.switch, prov.port) if prov.switch and prov.port else None
        out[host] = Planned(host, n.group, n.profile_name, n.state, real, port,
                            n.serial if real else None,
                            normalize_mac(n.mac) if real else None,
                            normalize_mac(n.bmc_mac) if real else None,
                            n.ib_guid if real else None)
    return out
