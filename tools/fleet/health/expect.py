"""What the inventory says a node must show: pure functions of the inventory, shared by
the health checks and the lab (which gives each data-disk mount point a real mount)."""

from __future__ import annotations

from fleet.inventory.model import Node
from fleet.render.mkvlayout import data_mount


def data_mounts(node: Node) -> list[str]:
    """The mount points of an mkv volume's data disks, as the pillar renders them
    (``node:disks:data``): one ``/srv/mkv/svNN`` per data disk; none off an array."""
    if node.mkv_array is None:
        return []
    return [data_mount(i) for i in range(len(node.profile.data_disks))]
