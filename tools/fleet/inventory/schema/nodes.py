"""``node_groups:`` and ``nodes:``: machines by host range, and per-machine facts."""


from ipaddress import IPv4Address
from typing import Annotated, Literal

from pydantic import Field, StrictInt, StringConstraints

from fleet.inventory.schema.base import HostPattern, Model, Name
from fleet.inventory.schema.hardware import DiskMatch
from fleet.inventory.schema.racks import GroupPlace, Place
from fleet.inventory.types import Text

Role = Literal[
    "nvidia",
    "infiniband",
    "slurm.compute",
    "slurm.controller",
    "mkv.volume",
    "mkv.master",
    "provisioning",
]
ROLES: tuple[str, ...] = Role.__args__  # type: ignore[attr-defined]
IMPLICIT_ROLES: tuple[str, ...] = ("base", "network")


class NicRule(Model):
    """How a group's NIC is addressed and cabled: ``ip = ip_base + index``,
    ``port = first_port + position in the group``."""

    network: Name
    """the networks entry the NIC is on; its purpose must fit the NIC (bmc, ethernet: provisioning,
    infiniband: ipoib)"""
    ip_base: IPv4Address | None = None
    """each machine's address is ip_base + the number in its name (null: each node gives
    nodes.<name>.ip)"""
    switch: Name | None = None
    """the switches entry the NIC is cabled to (needed when it has a port)"""
    first_port: StrictInt | None = Field(default=None, ge=1)
    """switch port of the group's first machine; the others follow in order (first_port +
    position)"""


class NodeGroup(Model):
    hosts: HostPattern
    """hostname or range such as tbox-[001-038]"""
    profile: Name
    """the profiles entry these machines are"""
    roles: list[Role] = Field(default=[])
    """Salt roles of these machines (pillar node:roles, top.sls); base and network are implicit"""
    slurm_partition: Name | None = None
    """the slurm.partitions entry of these machines (with role slurm.compute only, and required
    there)"""
    mkv_array: Name | None = None
    """the mkv.arrays entry these machines are volumes of (with role mkv.volume only, and required
    there)"""
    image: Name | None = None
    """a site.images entry (default: site.install)"""
    nics: dict[Name, NicRule] = Field(min_length=1)
    """how each of the profile's NICs, and bmc, is addressed and cabled; exactly one on a
    provisioning network"""
    place: GroupPlace | None = None
    """the racks its machines are in (null: not placed, unless a node gives its own place)"""


class HardwareFacts(Model):
    """What a machine actually has, as found by discovery; must match its profile."""

    gpus: StrictInt | None = Field(default=None, ge=0)
    """GPUs found; must equal the profile's gpu.count (0 without gpu)"""
    cpu_sockets: StrictInt | None = Field(default=None, ge=1)
    """CPU sockets found; must equal the profile's cpu.sockets"""
    cores_per_socket: StrictInt | None = Field(default=None, ge=1)
    """cores per socket found; must equal the profile's cpu.cores_per_socket"""
    memory_gb: StrictInt | None = Field(default=None, ge=1)
    """RAM found in GB; must equal the profile's memory_gb"""


NodeState = Literal["planned", "burn-in", "active", "maintenance", "retired"]
NODE_STATES: tuple[str, ...] = NodeState.__args__  # type: ignore[attr-defined]


class NodeFacts(Model):
    state: NodeState = "active"
    """lifecycle: planned (DHCP, DNS, boot files and pillar, in Slurm as State=FUTURE, not in the
    default target of apply/health/rollout), burn-in (discovered and accepted, `fleet discover
    accept`: installed and configured, in Slurm in the hidden root-only burn-in partition alone,
    in no user partition, until `fleet burnin` passes it; not in health's and rollout's
    default target), active,
    maintenance (drained in Slurm with reason by the controller's next apply; not in health's
    and rollout's default target) or retired (no boot files, DHCP, DNS, pillar or Slurm; keeps
    its slot in its group's range, so neighbours keep their ports; `fleet keys check` flags its
    key)"""
    reason: Text | None = None
    """why the node is in maintenance (required there): Slurm's drain reason, after the prefix
    'fleet-inventory: '; a note on other states"""
    slurm_partition: Name | None = None
    """this machine's Slurm partition instead of its group's (role slurm.compute only)"""
    serial: Annotated[Text, StringConstraints(min_length=1, max_length=64)]
    """the machine's serial number (unique); carried into pillar node:serial"""
    mac: str
    """MAC of the NIC on the provisioning network"""
    bmc_mac: str
    """MAC of the BMC: dnsmasq leases it the bmc NIC's address as <host>-bmc"""
    ib_guid: Annotated[str, StringConstraints(pattern=r"^0x[0-9a-f]{16}$")] | None = None
    """GUID of the InfiniBand HCA (unique); carried into pillar node:ib_guid"""
    ip: dict[Name, IPv4Address] = Field(default={})
    """per-NIC override"""
    port: dict[Name, Annotated[StrictInt, Field(ge=1)]] = Field(default={})
    """per-NIC override"""
    nics: dict[Name, NicRule] = Field(default={})
    """per-NIC rule instead of the group's (e.g. re-cabled to another fabric): network, switch;
    the address is ip_base + index (or ip.<nic>), the port first_port itself (or port.<nic>)"""
    hardware: HardwareFacts | None = None
    """what discovery found; `fleet validate` compares it with the profile"""
    boot_disk: DiskMatch | None = None
    """this machine's boot-disk match (e.g. by serial), instead of its profile's"""
    comment: Text | None = None
    """free note for the operator; no config uses it"""
    place: Place | None = None
    """this machine's rack and unit, instead of its group's stacking"""
