"""The resolved inventory: one record per machine, every rule already applied.

Renderers read only these types. Each record keeps ``origin``: for each derived field,
the YAML path that determined it, so that later checks can point at the right line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network
from typing import NamedTuple

from fleet.inventory import schema
from fleet.problems import Problem

YamlPath = tuple[str | int, ...]


class Interface(NamedTuple):
    name: str  # NIC name in the profile ("prov", "ib") or "bmc"
    kind: str  # ethernet | infiniband | bmc
    network: str
    address: IPv4Address | None
    cidr: IPv4Network
    gateway: IPv4Address | None
    vlan: int | None
    mtu: int
    mac: str | None
    switch: str | None
    port: int | None
    speed_gbps: int | None


@dataclass(slots=True)
class Node:
    hostname: str
    index: int | None
    position: int  # 0-based position inside its group
    group: str
    profile_name: str
    profile: schema.Profile
    roles: tuple[str, ...]
    serial: str
    mac: str
    bmc_mac: str
    ib_guid: str | None
    interfaces: dict[str, Interface]
    boot_nic: str  # the NIC on the provisioning network (PXE, Salt, Slurm traffic)
    partition: str | None
    mkv_array: str | None
    boot_disk: schema.DiskMatch | None
    facts: schema.NodeFacts
    origin: dict[str, YamlPath] = field(default_factory=dict)
    image: str | None = None  # a site.images entry; None: the site's install (Ubuntu)
    state: str = "active"  # planned | active | maintenance | retired (schema.NodeState)
    reason: str | None = None  # why, for maintenance (Slurm's drain reason)
    # the roles fleet derives (fleet.inventory.roles), set once by the loader; roles are the
    # node group's written ones
    derived_roles: tuple[str, ...] = ()

    @property
    def prov(self) -> Interface:
        return self.interfaces[self.boot_nic]

    @property
    def address(self) -> IPv4Address:
        addr = self.prov.address
        assert addr is not None  # expand() gives every NIC an address
        return addr

    def has(self, role: str) -> bool:
        """Whether the node group writes ``role`` (the inventory's own rules read these)."""
        return role in self.roles

    @property
    def all_roles(self) -> tuple[str, ...]:
        """The full role set: written, then derived (pillar node:roles)."""
        return (*self.roles, *self.derived_roles)

    def runs(self, role: str) -> bool:
        """Whether ``role`` is in the node's full role set."""
        return role in self.roles or role in self.derived_roles


@dataclass(frozen=True, slots=True)
class Inventory:
    """A validated inventory: the raw document plus the expanded nodes."""

    file: str
    raw: schema.Inventory
    nodes: dict[str, Node]  # by hostname, in inventory order; every state but retired
    retired: dict[str, Node] = field(default_factory=dict)  # state retired, rendered nowhere
    warnings: tuple[Problem, ...] = ()  # fleet.inventory.advice: valid, but worth a word
    _groupings: dict[str, dict[str, list[Node]]] = field(default_factory=dict, repr=False,
                                                         compare=False)

    def in_state(self, *states: str) -> list[Node]:
        return [n for n in self.nodes.values() if n.state in states]

    def with_role(self, role: str) -> list[Node]:
        return [n for n in self.nodes.values() if role in n.roles]

    @property
    def master_address(self) -> IPv4Address:
        """Where minions and installers reach the Salt master."""
        salt = self.raw.site.salt
        return salt.master_address or self.nodes[salt.master].address

    @property
    def standby_address(self) -> IPv4Address | None:
        """Where minions reach the standby master (its provisioning address), or None."""
        standby = self.raw.site.salt.standby
        return None if standby is None else self.nodes[standby.host].address

    def in_partition(self, partition: str) -> list[Node]:
        return self._members("partition").get(partition, [])

    def in_array(self, array: str) -> list[Node]:
        return self._members("mkv_array").get(array, [])

    def _members(self, attr: str) -> dict[str, list[Node]]:
        """Nodes grouped by ``attr`` (computed once: renderers ask per partition/array)."""
        cache = self._groupings
        if attr not in cache:
            groups: dict[str, list[Node]] = {}
            for node in self.nodes.values():
                key = getattr(node, attr)
                if key is not None:
                    groups.setdefault(key, []).append(node)
            cache[attr] = groups
        return cache[attr]
