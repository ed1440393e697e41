"""Each node's Ethernet NICs by the name they have on the node: the boot NIC is renamed
``boot_nic_name`` (salt/network/defaults.yaml, as netplan and the autoinstall name it),
the others keep their inventory name (netplan set-name). BMC ports are the BMC's, never
the host's; InfiniBand has no LLDP. One definition for the lldpd role's pillar (which
interfaces it listens on) and for ``fleet cabling`` (which interface should hear what)."""

from __future__ import annotations

import functools
from pathlib import Path

import yaml

from fleet.inventory.model import Node

NETWORK_DEFAULTS = Path(__file__).resolve().parents[3] / "salt" / "network" / "defaults.yaml"


@functools.lru_cache(maxsize=1)
def boot_nic_name(defaults: Path = NETWORK_DEFAULTS) -> str:
    """The network role's ``boot_nic_name``."""
    try:
        data = yaml.safe_load(defaults.read_text(encoding="utf-8"))
        name = data["values"]["boot_nic_name"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise RuntimeError(f"{defaults}: cannot read values.boot_nic_name ({exc}): "
                           "fleet runs from its checkout, beside salt/") from exc
    if not isinstance(name, str) or not name:
        raise RuntimeError(f"{defaults}: values.boot_nic_name is not a name: {name!r}")
    return name


def on_node(node: Node, nic: str, boot_name: str) -> str:
    """The interface name NIC ``nic`` of ``node`` has on the node."""
    return boot_name if nic == node.boot_nic else nic


def ethernet(node: Node, boot_name: str) -> list[str]:
    """The node's Ethernet interfaces (by name on the node), in inventory order."""
    return [on_node(node, nic, boot_name) for nic, iface in node.interfaces.items()
            if iface.kind == "ethernet"]
