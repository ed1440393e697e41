"""``profiles:``: hardware models (CPU, GPUs, disks, NICs, BMC)."""


from typing import Annotated, Literal

from pydantic import Field, StrictInt, StringConstraints

from fleet.inventory.schema.base import DUMPED, BranchSpec, Model, Name
from fleet.inventory.schema.racks import MAX_HEIGHT_U
from fleet.inventory.types import Text


class Cpu(Model):
    model_config = DUMPED

    model: Text
    """CPU model; carried into pillar node:hardware:cpu"""
    sockets: StrictInt = Field(ge=1, le=8)
    """CPU sockets: Slurm's Sockets= and the split of GPUs over sockets in gres.conf"""
    cores_per_socket: StrictInt = Field(ge=1, le=512)
    """physical cores per socket: Slurm's CoresPerSocket= and gres.conf's Cores= ranges"""
    threads_per_core: StrictInt = Field(default=1, ge=1, le=8)
    """hardware threads per core (2 with SMT): Slurm's ThreadsPerCore="""


class Gpu(Model):
    model_config = DUMPED

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

    model_config = DUMPED

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


BurninCheck = Literal["cpu-stress", "memtester", "disk-verify", "smart", "link-speed",
                      "gpu-present", "gpu-stress", "nccl-allreduce", "ib-write-bw",
                      "nccl-pair"]
BURNIN_CHECKS: tuple[str, ...] = BurninCheck.__args__  # type: ignore[attr-defined]


class BurninTest(Model):
    seconds: StrictInt = Field(default=60, ge=0, le=7 * 86400)
    """how long it runs (0: a check with no duration, such as SMART health; memtester, one
    loop of ``mb``: how long that takes); a check on one node is stopped after twice this
    and a margin"""
    tolerance_percent: StrictInt = Field(default=10, ge=0, le=100)
    """how far a figure may fall short of the profile's baseline (the median of the nodes of
    the profile that passed it) before the node fails as an outlier"""
    mb: StrictInt | None = Field(default=None, ge=1, le=16 * 1024 * 1024)
    """memtester's and disk-verify's size in MiB (null: 256)"""


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
    burnin: dict[BurninCheck, BurninTest] = Field(default={})
    """the burn-in of these machines (`fleet burnin`): each check with its duration and
    tolerance; a node leaves burn-in for active only when it passes every one (empty: its
    nodes fail burn-in, and `fleet burnin finish` refuses them)"""

    @property
    def data_disks(self) -> list[Disk]:
        """One entry per data disk (an entry of ``disks`` repeated ``count`` times), in
        order: on an mkv volume the i-th is subvolume i."""
        return [d for d in self.disks if d.role == "data" for _ in range(d.count)]
