"""``networks:`` and ``switches:``."""


from ipaddress import IPv4Address, IPv4Network
from typing import Literal

from pydantic import Field, StrictInt

from fleet.inventory.schema.base import Model
from fleet.inventory.schema.racks import MAX_HEIGHT_U, Place
from fleet.inventory.types import HostName, Text


class IpPool(Model):
    start: IPv4Address
    """first address of the dnsmasq dhcp-range"""
    end: IPv4Address
    """last address of the dnsmasq dhcp-range"""


class Network(Model):
    purpose: Literal["bmc", "provisioning", "ipoib"]
    """which NICs it carries: BMCs, the nodes' Ethernet NICs (boot, Salt, Slurm; DHCP for known MACs
    only), or IPoIB (no DHCP)"""
    cidr: IPv4Network
    """the network's range: node addresses must lie inside it; its prefix length goes to netplan and
    the DHCP netmask"""
    gateway: IPv4Address | None = None
    """default route of the nodes on this network (netplan, installer, DHCP router option); null: no
    default route"""
    vlan: StrictInt | None = Field(default=None, ge=1, le=4094)
    """access VLAN of the switch ports (hosts send untagged frames); one network per VLAN"""
    mtu: StrictInt = Field(default=1500, ge=576, le=65520)
    """MTU in bytes of the nodes' NICs on it (netplan, installer); also sent by DHCP on provisioning
    networks; at most 9216 on Ethernet (bmc, provisioning), 4092 on IPoIB in datagram mode"""
    dhcp_pool: IpPool | None = None
    """dynamic pool for not-yet-inventoried machines"""
    pkey: str | None = Field(default=None, pattern=r"^0x[0-9a-fA-F]{1,4}$")
    """InfiniBand partition key (ipoib networks only); carried into pillar node:interfaces, no state
    configures it"""
    ipoib_mode: Literal["datagram", "connected"] = "datagram"
    """IPoIB mode of the nodes' IB interfaces (netplan infiniband-mode, or a udev rule where netplan
    lacks it)"""


class Switch(Model):
    kind: Literal["ethernet", "infiniband"]
    """which NICs may be cabled to it: BMC and Ethernet NICs to ethernet, InfiniBand NICs to
    infiniband"""
    model: Text
    """switch model, for the operator; no config uses it"""
    ports: StrictInt = Field(ge=1, le=1024)
    """number of ports: a NIC's port must not exceed it"""
    speed_gbps: StrictInt = Field(ge=1)
    """port speed in Gb/s; recorded only, no config or check uses it"""
    subnet_manager: bool = False
    """the switch runs the fabric's SM"""
    sm_hosts: list[HostName] = Field(default=[])
    """hosts that run opensm for this fabric"""
    location: Text | None = None
    """where it is (e.g. the room), for the operator; no config uses it"""
    place: Place | None = None
    """its rack and lowest unit (`fleet render`'s rack elevations; null: not placed)"""
    height_u: StrictInt = Field(default=1, ge=1, le=MAX_HEIGHT_U)
    """rack units it takes, from place.unit upward"""
