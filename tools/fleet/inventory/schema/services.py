"""``slurm:`` and ``mkv:``: the Slurm cluster and the minikeyvalue arrays."""


from typing import Annotated

from pydantic import Field, StrictInt, StringConstraints

from fleet.inventory.schema.base import Model, Name, OsName, PerOs
from fleet.inventory.types import (
    DeployDir,
    HostName,
    NumericVersion,
    PackageVersion,
    PathOrUrl,
    Text,
    TimeLimit,
)


class Partition(Model):
    ib_switch: Name
    """the InfiniBand switch (fabric) of its nodes: its switch in topology.conf; members must be
    cabled to it"""
    default: bool = False
    """the partition jobs go to when they name none (Default=YES); at most one"""
    max_time: TimeLimit = "INFINITE"
    """longest a job may run (Slurm MaxTime=)"""


# the OS releases whose Slurm fleet knows (fleet/inventory/slurmcompat.py): those it installs
SlurmOs = OsName
# one version, or one per OS release
SlurmVersion = PerOs[NumericVersion]


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
    volumes_removed: list[HostName] = Field(default=[], max_length=1000)
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
