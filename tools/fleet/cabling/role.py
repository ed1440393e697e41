"""The ``lldp`` role, derived for every node (pillar ``node:roles``; salt/top.sls maps it
to salt/lldp): lldpd listening on the node's Ethernet NICs and announcing its hostname, so
that ``fleet cabling`` can ask each node which switch port it hears on each NIC."""

from __future__ import annotations

from typing import Any

from fleet.cabling.nics import boot_nic_name, ethernet
from fleet.inventory.model import Node
from fleet.inventory.roles import LLDP

ROLES = (LLDP,)


def roles(node: Node) -> list[str]:
    return [LLDP]


def node_pillar(node: Node) -> dict[str, Any]:
    """Pillar ``node:lldp``: the interfaces lldpd runs on, the system name it announces."""
    return {"interfaces": ethernet(node, boot_nic_name()), "system_name": node.hostname}
