"""The head node: the one definition of the hosts the site's provisioning, Salt, Slurm
and mkv stand on. A reinstall refuses them (they run it), a rollout does not reboot them,
``fleet power`` does not power them off, and the rack pictures colour them as service."""

from __future__ import annotations

from fleet.inventory.model import Inventory, Node

# the roles whose host takes the site's services down with it
HEAD_ROLES = ("provisioning", "slurm.controller", "mkv.master")


def has_head_role(node: Node) -> bool:
    return any(node.has(r) for r in HEAD_ROLES)


def head_reasons(inv: Inventory, node: Node) -> list[str]:
    """Why ``node`` is a head node ("salt master" or "standby salt master" and its head
    roles, or "provisioning host"), in that order; empty for any other node."""
    site = inv.raw.site
    reasons = [r for r in HEAD_ROLES if node.has(r)]
    if node.hostname == site.salt.master:
        reasons.insert(0, "salt master")
    elif site.salt.standby is not None and node.hostname == site.salt.standby.host:
        reasons.insert(0, "standby salt master")
    if not reasons and node.hostname == site.provisioning_host:
        reasons = ["provisioning host"]
    return reasons
