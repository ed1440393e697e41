"""Why ``fleet power off|cycle|reset`` must not act on a node: each rule is a function of
the node that returns the reasons, empty when it may go. A node with Slurm jobs is no
refusal: it is drained first (fleet.ops.powerdrain, the one drain).

- :func:`head_node_refusal`: the provisioning host, the Salt master and the head roles
  (what ``fleet rollout --reboot`` and ``fleet reinstall`` refuse too; nothing overrides
  it: fleet does not take down the head it runs from).
- :func:`boot_mode_refusal`: a node whose PXE boot mode is ``install`` (an install is
  armed: a power action would start or wreck it), or cannot be read: the one rule of
  fleet.pxe.powerguard, which ``fleet rollout --reboot`` applies too; overridden by
  ``--ignore-boot-mode``, as there."""

from __future__ import annotations

from fleet.inventory.head import head_reasons
from fleet.inventory.model import Inventory, Node
from fleet.pxe.powerguard import BootModeReader, power_refusal


def head_node_refusal(inv: Inventory, node: Node) -> list[str]:
    reasons = head_reasons(inv, node)
    return [f"head node ({', '.join(reasons)}): powering it off takes the site's "
            "provisioning / Salt / Slurm / mkv head down with it"] if reasons else []


def boot_mode_refusal(modes: BootModeReader, node: Node) -> list[str]:
    """fleet.pxe.powerguard's rule: ``install`` or an unreadable mode is a refusal."""
    why = power_refusal(node.hostname, modes)
    return [why] if why else []


def refusals(inv: Inventory, node: Node, modes: BootModeReader, *,
             ignore_boot_mode: bool = False) -> list[str]:
    """Every reason (the boot mode is not read for a head node)."""
    found = head_node_refusal(inv, node)
    if found or ignore_boot_mode:
        return found
    return boot_mode_refusal(modes, node)
