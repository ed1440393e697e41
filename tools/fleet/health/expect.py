"""What the inventory says a node must show: pure functions of the inventory, shared by
the health checks and the lab (which gives each data-disk mount point a real mount)."""

from __future__ import annotations

from fleet.inventory.model import Node
from fleet.render.pillar import MKV_ROOT, subvolume


def data_mounts(node: Node) -> list[str]:
    """The mount points of an mkv volume's data disks, as the pillar renders them
    (``node:disks:data``): one ``/srv/mkv/svNN`` per data disk; none off an array."""
    if node.mkv_array is None:
        return []
    count = sum(d.count for d in node.profile.disks if d.role == "data")
    return [f"{MKV_ROOT}/{subvolume(i)}" for i in range(count)]
