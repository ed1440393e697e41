"""Pydantic models of ``inventory.yaml`` exactly as written (before expansion).

Field names here are the YAML keys; :mod:`fleet.inventory.expand` turns node groups,
profiles and per-node facts into one resolved record per machine. One module per part of
the file: :mod:`.site`, :mod:`.racks`, :mod:`.networks` (and switches), :mod:`.hardware`
(profiles), :mod:`.nodes` (node groups and nodes), :mod:`.services` (Slurm, mkv),
:mod:`.compute`; :mod:`.base` holds the base model and the types they share. The root model,
:class:`Inventory`, is here, and every public name of the parts is re-exported
(``schema.Profile``, ``from fleet.inventory.schema import Admin``).
"""


from pydantic import Field

from fleet.inventory.schema.base import (
    HOST_PATTERN,
    NAME_PATTERN,
    NVIDIA_BRANCHES,
    BranchSpec,
    DriverBranch,
    HostPattern,
    Model,
    Name,
    OsName,
)
from fleet.inventory.schema.compute import (
    Artifact,
    CentralValkey,
    CodeSync,
    Compute,
    ImageRef,
    QueueName,
    Sha256,
    Triton,
)
from fleet.inventory.schema.hardware import Bmc, Cpu, Disk, DiskMatch, Gpu, Nic, Profile
from fleet.inventory.schema.networks import IpPool, Network, Switch
from fleet.inventory.schema.nodes import (
    IMPLICIT_ROLES,
    NODE_STATES,
    ROLES,
    HardwareFacts,
    NicRule,
    NodeFacts,
    NodeGroup,
    NodeState,
    Role,
)
from fleet.inventory.schema.racks import MAX_HEIGHT_U, MAX_RACK_U, GroupPlace, Place, Rack
from fleet.inventory.schema.services import (
    Mkv,
    MkvArray,
    MkvArtifact,
    Partition,
    Slurm,
    SlurmOs,
    SlurmVersion,
)
from fleet.inventory.schema.site import (
    SSH_KEY,
    WEEK_S,
    Admin,
    AlertHolds,
    AptSpec,
    BurninTools,
    DebianImage,
    InstallMedia,
    Monitoring,
    MonitoringThresholds,
    OsSpec,
    SaltSpec,
    Site,
    StandbySpec,
)
from fleet.inventory.types import HostName

__all__ = [
    "HOST_PATTERN", "IMPLICIT_ROLES", "MAX_HEIGHT_U", "MAX_RACK_U", "NAME_PATTERN",
    "NODE_STATES", "NVIDIA_BRANCHES", "ROLES", "SSH_KEY", "WEEK_S",
    "Admin", "AlertHolds", "AptSpec", "Artifact", "Bmc", "BranchSpec", "BurninTools",
    "CentralValkey", "CodeSync", "Compute", "Cpu", "DebianImage", "Disk", "DiskMatch",
    "DriverBranch", "Gpu",
    "GroupPlace", "HardwareFacts", "HostPattern", "ImageRef", "InstallMedia", "Inventory",
    "IpPool", "Mkv", "MkvArray", "MkvArtifact", "Model", "Monitoring", "MonitoringThresholds",
    "Name", "Network", "Nic", "NicRule", "NodeFacts", "NodeGroup", "NodeState", "OsName",
    "OsSpec", "Partition", "Place", "Profile", "QueueName", "Rack", "Role", "SaltSpec",
    "Sha256", "Site", "Slurm", "SlurmOs", "SlurmVersion", "StandbySpec", "Switch", "Triton",
]


class Inventory(Model):
    site: Site
    """site-wide settings: names, time, DNS, admins, Salt, apt, installers, the provisioning host"""
    networks: dict[Name, Network] = Field(min_length=1)
    """networks by name: BMC, provisioning and IPoIB"""
    racks: dict[Name, Rack] = Field(default={})
    """racks by name, named by the place of switches, node groups and nodes"""
    switches: dict[Name, Switch] = Field(default={})
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
