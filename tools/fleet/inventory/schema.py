"""Pydantic models of ``inventory.yaml`` exactly as written (before expansion).

Field names here are the YAML keys; :mod:`fleet.inventory.expand` turns node groups,
profiles and per-node facts into one resolved record per machine.
"""

from __future__ import annotations

import re
from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    StringConstraints,
    Tag,
    field_validator,
)

from fleet.inventory.types import (
    DeployDir,
    DomainName,
    Fingerprint,
    HostName,
    KernelArg,
    NumericVersion,
    PackageVersion,
    PathOrUrl,
    RelPath,
    Server,
    Text,
    TimeLimit,
    Timezone,
    Url,
    no_control,
)

NAME_PATTERN = r"^[a-z][a-z0-9-]{0,62}$"
HOST_PATTERN = r"^[a-z][a-z0-9-]*(\[\d+-\d+\][a-z0-9-]*)?$"
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
HostPattern = Annotated[str, StringConstraints(pattern=HOST_PATTERN)]
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
SSH_KEY = re.compile(
    r"(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com)"
    r" [A-Za-z0-9+/=]+( .{0,200})?"
)


class Model(BaseModel):
    # Strict ints: YAML `yes` must not pass as 1. No inf/nan anywhere.
    # defer_build: one schema is built for the whole document when it is first validated,
    # instead of one per model at import time (start-up is most of a small render).
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False,
                              defer_build=True)


# --- site -----------------------------------------------------------------------------


class Admin(Model):
    name: Name
    ssh_keys: list[str] = Field(min_length=1)
    sudo: bool = True

    @field_validator("ssh_keys")
    @classmethod
    def _keys(cls, keys: list[str]) -> list[str]:
        for key in keys:
            no_control(key)
            if not SSH_KEY.fullmatch(key):
                raise ValueError(f"{key[:40]!r} is not an OpenSSH public key")
        return keys


class OsSpec(Model):
    """What PXE installs (Ubuntu autoinstall). The Salt states also run on Debian 12."""

    distro: Literal["ubuntu"] = "ubuntu"
    release: Literal["22.04", "24.04"] = "24.04"


class InstallMedia(Model):
    """Where the installer comes from: served by the provisioning host over HTTP."""

    kernel: RelPath = Field(description="path under the boot HTTP root")
    initrd: RelPath
    iso_url: Url = Field(description="live-server ISO that casper downloads into RAM")
    iso_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    iso_source: PathOrUrl = Field(
        description="where the provisioning role fetches that ISO from (an http(s) URL, or "
                    "an absolute path on the provisioning host); checked against "
                    "iso_sha256, served at iso_url, its casper/vmlinuz and casper/initrd "
                    "unpacked to kernel and initrd")


class DebianImage(Model):
    """A Debian netboot installer (``debian-installer-<n>-netboot-<arch>``) driven by a
    preseed rendered from the node's data; node groups name it with ``image:``."""

    type: Literal["debian-preseed"]
    kernel: RelPath = Field(description="path under the boot HTTP root")
    initrd: RelPath
    mirror: Url = Field(description="Debian archive the installer installs from")
    suite: Name = "bookworm"
    args: list[KernelArg] = Field(default_factory=list, max_length=64,
                                  description="extra kernel arguments")


class AptSpec(Model):
    mirror: Url
    security_mirror: Url | None = None


class SaltSpec(Model):
    master: HostName
    master_address: IPv4Address | None = Field(
        default=None,
        description="the address minions and installers use to reach the master (a VIP, "
                    "or the lab's host); default: the master node's provisioning address")
    version: Annotated[str, StringConstraints(pattern=r"^\d+(\.\d+)*$")] = "3008.4"
    master_finger: Fingerprint | None = Field(
        default=None, description="the master's public key fingerprint (salt-key -F master)"
    )
    repo: Url = Field(default="https://packages.broadcom.com/artifactory/saltproject-deb",
                      description="apt repository of salt-minion for installed nodes")
    keyring: RelPath = Field(default="keys/salt-archive-keyring.pgp",
                         description="the repository's signing key, under the boot HTTP root")
    reinstall_port: StrictInt = Field(
        default=8470, ge=1, le=65535,
        description="port of `fleet reinstall`'s key/callback endpoint on the master: "
                    "installers fetch the new minion key and call back there")


class Site(Model):
    name: Name
    domain: DomainName
    timezone: Timezone = "UTC"
    ntp_servers: list[Server] = Field(min_length=1, max_length=16)
    dns_servers: list[IPv4Address] = Field(default_factory=list)
    os: OsSpec = OsSpec()
    admins: list[Admin] = Field(min_length=1)
    salt: SaltSpec
    apt: AptSpec
    install: InstallMedia
    images: dict[Name, DebianImage] = Field(
        default_factory=dict, description="further installers, chosen by node_groups.*.image")
    provisioning_host: HostName
    http_port: StrictInt = Field(default=80, ge=1, le=65535)
    pxe_root: DeployDir = Field(default="/srv/fleet/pxe", description="where pxe/ is deployed")
    checkout: DeployDir = Field(default="/srv/fleet/checkout",
                          description="this repository on the provisioning host")
    pxe_state: DeployDir = Field(default="/var/lib/fleet/pxe-state",
                           description="run-time boot-mode links, served as /state/")
    upstream_dns: list[IPv4Address] = Field(
        default_factory=list, description="resolvers the site DNS forwards to")


# --- networks and switches -------------------------------------------------------------


class IpPool(Model):
    start: IPv4Address
    end: IPv4Address


class Network(Model):
    purpose: Literal["bmc", "provisioning", "ipoib"]
    cidr: IPv4Network
    gateway: IPv4Address | None = None
    vlan: StrictInt | None = Field(default=None, ge=1, le=4094)
    mtu: StrictInt = Field(default=1500, ge=576, le=65520)
    dhcp_pool: IpPool | None = Field(
        default=None, description="dynamic pool for not-yet-inventoried machines"
    )
    pkey: str | None = Field(default=None, pattern=r"^0x[0-9a-fA-F]{1,4}$")
    ipoib_mode: Literal["datagram", "connected"] = "datagram"


class Switch(Model):
    kind: Literal["ethernet", "infiniband"]
    model: Text
    ports: StrictInt = Field(ge=1, le=1024)
    speed_gbps: StrictInt = Field(ge=1)
    subnet_manager: bool = Field(default=False, description="the switch runs the fabric's SM")
    sm_hosts: list[HostName] = Field(default_factory=list,
                                     description="hosts that run opensm for this fabric")
    location: Text | None = None


# --- hardware profiles ------------------------------------------------------------------


class Cpu(Model):
    model: Text
    sockets: StrictInt = Field(ge=1, le=8)
    cores_per_socket: StrictInt = Field(ge=1, le=512)
    threads_per_core: StrictInt = Field(default=1, ge=1, le=8)


class Gpu(Model):
    model: Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]+$")]
    count: StrictInt = Field(ge=1, le=64)
    memory_gb: StrictInt = Field(ge=1)


class DiskMatch(Model):
    """A subiquity storage ``match`` spec naming one disk."""

    serial: Text | None = None
    model: Text | None = None
    vendor: Text | None = None
    path: Text | None = None
    id_path: Text | None = None
    size: Literal["smallest", "largest"] | None = None
    ssd: bool | None = None


class Disk(Model):
    role: Literal["boot", "data"]
    kind: Literal["nvme", "sata-ssd", "sas-ssd", "hdd"]
    size_gb: StrictInt = Field(ge=1)
    count: StrictInt = Field(default=1, ge=1, le=64)
    match: DiskMatch | None = None


class Nic(Model):
    kind: Literal["ethernet", "infiniband"]
    speed_gbps: StrictInt = Field(ge=1)
    model: Text | None = None


class Bmc(Model):
    kind: Text
    protocol: Literal["redfish", "ipmi"]
    user: Text
    password_secret: Name = Field(description="name of a secret in the secrets store")


class Profile(Model):
    vendor: Text
    model: Text
    boot_mode: Literal["uefi", "bios"] = "uefi"
    cpu: Cpu
    memory_gb: StrictInt = Field(ge=1)
    gpu: Gpu | None = None
    disks: list[Disk] = Field(min_length=1)
    nics: dict[Name, Nic] = Field(min_length=1)
    bmc: Bmc
    read_gbps: float | None = Field(
        default=None, ge=0, description="sustained network read rate of one storage node"
    )

    @property
    def data_disks(self) -> list[Disk]:
        """One entry per data disk (an entry of ``disks`` repeated ``count`` times), in
        order: on an mkv volume the i-th is subvolume i."""
        return [d for d in self.disks if d.role == "data" for _ in range(d.count)]


# --- node groups and nodes -------------------------------------------------------------


class NicRule(Model):
    """How a group's NIC is addressed and cabled: ``ip = ip_base + index``,
    ``port = first_port + position in the group``."""

    network: Name
    ip_base: IPv4Address | None = None
    switch: Name | None = None
    first_port: StrictInt | None = Field(default=None, ge=1)


class NodeGroup(Model):
    hosts: HostPattern = Field(description="hostname or range such as tbox-[001-038]")
    profile: Name
    roles: list[Role] = Field(default_factory=list)
    slurm_partition: Name | None = None
    mkv_array: Name | None = None
    image: Name | None = Field(default=None,
                               description="a site.images entry (default: site.install)")
    nics: dict[Name, NicRule] = Field(min_length=1)


class HardwareFacts(Model):
    """What a machine actually has, as found by discovery; must match its profile."""

    gpus: StrictInt | None = Field(default=None, ge=0)
    cpu_sockets: StrictInt | None = Field(default=None, ge=1)
    cores_per_socket: StrictInt | None = Field(default=None, ge=1)
    memory_gb: StrictInt | None = Field(default=None, ge=1)


class NodeFacts(Model):
    serial: Annotated[Text, StringConstraints(min_length=1, max_length=64)]
    mac: str = Field(description="MAC of the NIC on the provisioning network")
    bmc_mac: str
    ib_guid: Annotated[str, StringConstraints(pattern=r"^0x[0-9a-f]{16}$")] | None = None
    ip: dict[Name, IPv4Address] = Field(default_factory=dict, description="per-NIC override")
    port: dict[Name, Annotated[StrictInt, Field(ge=1)]] = Field(
        default_factory=dict, description="per-NIC override")
    hardware: HardwareFacts | None = None
    boot_disk: DiskMatch | None = None
    comment: Text | None = None


# --- services ---------------------------------------------------------------------------


class Partition(Model):
    ib_switch: Name
    default: bool = False
    max_time: TimeLimit = "INFINITE"


# the OS releases whose Slurm fleet knows (fleet/inventory/slurmcompat.py)
SlurmOs = Literal["ubuntu-24.04", "ubuntu-22.04", "debian-12"]


def _slurm_version_form(value: object) -> str:
    return "dict" if isinstance(value, dict) else "str"


# one version, or one per OS release; errors come from the form written only (the tags
# are pydantic's own names, dropped from the error's path)
SlurmVersion = Annotated[
    Annotated[NumericVersion, Tag("str")] | Annotated[dict[SlurmOs, NumericVersion], Tag("dict")],
    Discriminator(_slurm_version_form)]


class Slurm(Model):
    cluster: Name
    version: SlurmVersion = Field(
        description="the Slurm every daemon runs (apt pin + hold), or one per OS release "
                    "(`{ubuntu-24.04: '23.11', debian-12: '22.05'}`) when nodes run several: "
                    "an OS's archive has one Slurm release, and a pin it does not ship is "
                    "ignored")
    controller: HostName
    memory_reserve_percent: StrictInt = Field(default=5, ge=0, le=50)
    partitions: dict[Name, Partition] = Field(min_length=1)


class MkvArray(Model):
    master: HostName
    port: StrictInt = Field(ge=1, le=65535)
    volume_port: StrictInt = Field(ge=1, le=65535)
    replicas: StrictInt = Field(ge=1, le=16)
    index_path: DeployDir
    purpose: Text | None = None


class MkvArtifact(Model):
    """The mkv binary: it cannot be built at install time, so it is a pinned artifact."""

    source: PathOrUrl = Field(description="absolute path on the master, or an http(s) URL")
    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")] | None = None


class Mkv(Model):
    version: PackageVersion | None = None
    artifact: MkvArtifact | None = None
    arrays: dict[Name, MkvArray] = Field(min_length=1)


class Inventory(Model):
    site: Site
    networks: dict[Name, Network] = Field(min_length=1)
    switches: dict[Name, Switch] = Field(default_factory=dict)
    profiles: dict[Name, Profile] = Field(min_length=1)
    node_groups: dict[Name, NodeGroup] = Field(min_length=1)
    nodes: dict[HostName, NodeFacts] = Field(min_length=1)
    slurm: Slurm | None = None
    mkv: Mkv | None = None
