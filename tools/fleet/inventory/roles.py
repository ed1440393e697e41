"""One full role set per node: the roles its node group writes (``node_groups.*.roles``)
plus the roles fleet derives from the rest of the inventory: monitoring (every node, its
GPUs, the Slurm controller, the monitoring host), ``lldp`` (every node), the compute
section's (fleet.inventory.compute), a standby master's (the master and the standby) and
an sftp backup destination's (its storage server). Set on each node once, when the
inventory is loaded (:attr:`fleet.inventory.model.Node.derived_roles`), and read from
there by the render (pillar ``node:roles``; salt/top.sls maps each role to its SLS),
``fleet node``, the health gate, status and the page."""

from __future__ import annotations

from fleet.inventory import compute, schema
from fleet.inventory.model import Node

# every node runs lldpd for `fleet cabling` (its pillar: fleet.cabling.role)
LLDP = "lldp"
MONITORING = ("monitoring.node", "monitoring.gpu", "monitoring.slurm", "monitoring.server")


def monitoring_host(raw: schema.Inventory) -> str:
    """The node that runs Prometheus (site.monitoring.host, else the provisioning host)."""
    return raw.site.monitoring.host or raw.site.provisioning_host


def monitoring(raw: schema.Inventory, node: Node) -> list[str]:
    out = ["monitoring.node"]
    if node.profile.gpu is not None and node.has("nvidia"):
        out.append("monitoring.gpu")
    if node.has("slurm.controller"):
        out.append("monitoring.slurm")
    if node.hostname == monitoring_host(raw):
        out.append("monitoring.server")
    return out


# with a standby master (site.salt.standby): the active master serves its keys to the
# standby (provisioning.keysource), the standby pulls them (provisioning.standby)
STANDBY = ("provisioning.keysource", "provisioning.standby")


def standby(raw: schema.Inventory, node: Node) -> list[str]:
    salt = raw.site.salt
    if salt.standby is None:
        return []
    if node.hostname == salt.master:
        return ["provisioning.keysource"]
    return ["provisioning.standby"] if node.hostname == salt.standby.host else []


# the storage server of an sftp backup destination (site.backup): the master's backup
# login (salt/backup/target.sls)
BACKUP_TARGET = "backup.target"


def backup_host(raw: schema.Inventory) -> str | None:
    """The node an sftp backup destination names, or None."""
    backup = raw.site.backup
    if backup is None or backup.destination.type != "sftp":
        return None
    return backup.destination.host


def backup(raw: schema.Inventory, node: Node) -> list[str]:
    return [BACKUP_TARGET] if node.hostname == backup_host(raw) else []


def derived(raw: schema.Inventory, node: Node) -> tuple[str, ...]:
    """The roles fleet adds to the node's written ones, in pillar order."""
    out = [*monitoring(raw, node), LLDP, *compute.roles(raw, node), *standby(raw, node),
           *backup(raw, node)]
    return tuple(r for r in dict.fromkeys(out) if r not in node.roles)
