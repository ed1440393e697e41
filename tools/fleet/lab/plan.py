"""What the lab is: the real inventory through lab/overlay.yaml, rendered into .lab/render."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

from fleet import secrets
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.lab.paths import PREFIX, Paths
from fleet.render import render_all, tree


@dataclass(frozen=True)
class LabNode:
    hostname: str
    address: IPv4Address
    mac: str
    roles: tuple[str, ...]
    gpus: int
    nic: str  # the inventory's name of the provisioning NIC (netplan's set-name)

    @property
    def container(self) -> str:
        return f"{PREFIX}-{self.hostname}"


@dataclass(frozen=True)
class Plan:
    inventory: Inventory
    subnet: IPv4Network
    gateway: IPv4Address
    nodes: list[LabNode]

    def node(self, hostname: str) -> LabNode:
        return next(n for n in self.nodes if n.hostname == hostname)


def load(paths: Paths, extra: Sequence[Path] = ()) -> Plan:
    """The lab: the inventory through the lab's overlays, then ``extra`` (an edit of the
    lab's inventory, as tests/lab/test_runbook.py makes one)."""
    inv = load_inventory(paths.inventory, [*paths.overlays, *extra])
    first = next(iter(inv.nodes.values()))
    prov = first.prov
    if prov.gateway is None:
        raise ValueError(f"network {prov.network} has no gateway: the lab master needs one")
    nodes = [LabNode(n.hostname, n.address, n.mac, n.roles,
                     n.profile.gpu.count if n.profile.gpu else 0, n.boot_nic)
             for n in inv.nodes.values()]
    return Plan(inv, prov.cidr, prov.gateway, nodes)


def render(paths: Paths, plan: Plan) -> int:
    """Render the lab's pillar/ and pxe/ into .lab/render; create the lab secrets store.
    Returns the number of files written or changed."""
    changes = tree.write(paths.render, render_all(plan.inventory))
    secrets.init(paths.secrets)
    return len(changes.added) + len(changes.changed) + len(changes.removed)
