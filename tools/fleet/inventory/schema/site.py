"""``site:``: names, time, DNS, admins, the installers, apt, Salt and monitoring."""


import re
from ipaddress import IPv4Address
from typing import Annotated, Literal

from pydantic import Field, StrictInt, StringConstraints, field_validator

from fleet.inventory.schema.backup import BackupSpec
from fleet.inventory.schema.base import DUMPED, NVIDIA_BRANCHES, BranchSpec, Model, Name
from fleet.inventory.schema.compute import Artifact
from fleet.inventory.types import (
    DeployDir,
    DomainName,
    Fingerprint,
    HostName,
    KernelArg,
    PathOrUrl,
    RelPath,
    Server,
    Timezone,
    Url,
    no_control,
)

SSH_KEY = re.compile(
    r"(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com)"
    r" [A-Za-z0-9+/=]+( .{0,200})?"
)
# the standby's sync key: written into root's authorized_keys on the master, with options
# before it, so no comment (nothing but the key itself)
SYNC_KEY = re.compile(r"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5[A-Za-z0-9+/]{48}")



class Admin(Model):
    model_config = DUMPED

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

    model_config = DUMPED

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
    args: list[KernelArg] = Field(default=[], max_length=64)
    """extra kernel arguments"""


class AptSpec(Model):
    model_config = DUMPED

    mirror: Url
    """apt archive nodes install from and keep (autoinstall, base.apt); one naming the provisioning
    host goes through its apt-cacher-ng"""
    security_mirror: Url | None = None
    """apt security archive, used like mirror (autoinstall, base.apt); null: the autoinstall sets no
    security archive"""
    repo: DeployDir | None = None
    """the site package repository on the provisioning host: every package the states pin or hold
    (`fleet repo fill`), signed by the secrets store's key, served as /repo/ and preferred by
    every node and installer (docs/repo.md); null: none"""


class StandbySpec(Model):
    """A second Salt master in failover mode (docs/salt.md, A standby master): the
    minions' master list is the master then this node; it holds the same master key and
    accepted minion keys, pulled from the active master (salt/provisioning/standby.sls)."""

    host: HostName
    """the standby head node: runs a salt-master with the active master's keys; fleet's
    changing verbs refuse to run there (fleet.inventory.masters)"""
    alive_interval_s: StrictInt = Field(default=30, ge=5, le=3600)
    """seconds between a minion's checks that its master is alive (master_alive_interval):
    how long a dead master goes unnoticed before the minion moves to the other one"""
    sync_key: str | None = None
    """the OpenSSH public key (ssh-ed25519) the standby pulls the keys with (its
    /etc/salt/pki/standby/sync_ed25519.pub, made by the state): authorized on the active
    master for a read-only rsync of its pki directory only, from the standby's address;
    null: the master authorizes none and the standby's sync fails, saying so"""
    sync_interval_s: StrictInt = Field(default=300, ge=60, le=86400)
    """seconds between two pulls of the keys by the standby (a systemd timer)"""

    @field_validator("sync_key")
    @classmethod
    def _key(cls, key: str | None) -> str | None:
        if key is not None:
            no_control(key)
            if not SYNC_KEY.fullmatch(key):
                raise ValueError(f"{key[:40]!r} is not an ssh-ed25519 public key")
        return key


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
    standby: StandbySpec | None = None
    """a standby master (Salt failover mode, one shared master key); null: one master"""


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


class BurninTools(Model):
    """The burn-in's GPU tools that no OS archive packages: each a pinned source tree that
    nvidia.burnin builds on every node of the nvidia role, with the archive's CUDA toolkit
    (and NCCL), into its own directory per pin (docs/discovery.md, Burn-in tools). A null
    pin builds nothing, and the check that needs the tool fails naming this field."""

    gpu_burn: Artifact | None = None
    """gpu-burn's source (github.com/wilicc/gpu-burn at one commit, a tar of its tree under one
    top directory, from the site's cache): the gpu-stress check's gpu_burn (null: not built,
    gpu-stress fails saying so)"""
    nccl_tests: Artifact | None = None
    """nccl-tests' source (github.com/NVIDIA/nccl-tests at one commit, a tar of its tree under
    one top directory, from the site's cache): the all_reduce_perf of the nccl-allreduce and
    nccl-pair checks, built with MPI against the archive's libnccl-dev and OpenMPI (null:
    not built, both checks fail saying so)"""


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
    dns_servers: list[IPv4Address] = Field(default=[])
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
    images: dict[Name, DebianImage] = Field(default={})
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
    upstream_dns: list[IPv4Address] = Field(default=[])
    """resolvers the site DNS forwards to"""
    monitoring: Monitoring = Monitoring()
    """Prometheus, Alertmanager and the alert thresholds (docs/operations.md, Monitoring)"""
    backup: BackupSpec | None = None
    """where `fleet backup` keeps the master's encrypted backup (docs/operations.md, Backup
    and restore); none: fleet backup refuses"""
    nvidia_branch: BranchSpec | None = Field(default_factory=lambda: dict(NVIDIA_BRANCHES))
    """the NVIDIA driver branch the nvidia role pins and holds, one for every OS or one per OS
    release; profiles.*.gpu.driver_branch overrides it per profile; pillar
    node:nvidia:branches, shown by `fleet diff`, checked by `make check-packages`"""
    burnin_tools: BurninTools = BurninTools()
    """the pinned sources of the burn-in's GPU tools that nvidia.burnin builds (pillar
    node:nvidia:burnin_tools)"""
