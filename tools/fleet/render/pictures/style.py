"""What a device is, for the pictures' colours: one category per node (from its roles),
one per switch kind, and the legend that names them."""

from __future__ import annotations

from fleet.inventory.head import has_head_role
from fleet.inventory.model import Node

# (category, fill, legend label), in legend order
CATEGORIES: tuple[tuple[str, str, str], ...] = (
    ("service", "#ffbe7d", "head / services (provisioning, Slurm controller, mkv master)"),
    ("gpu", "#a0cbe8", "GPU compute"),
    ("storage", "#8cd17d", "storage (mkv volume)"),
    ("other", "#d7d7d7", "other node"),
    ("ethernet", "#86bcb6", "Ethernet switch"),
    ("infiniband", "#d4a6c8", "InfiniBand switch"),
)
FILL = {name: fill for name, fill, _ in CATEGORIES}
FREE = "#ffffff"
EMPTY_U = "#f2f2f2"
# partitions of an InfiniBand fabric, in slurm.partitions order (cycled)
PARTITION_FILLS = ("#a0cbe8", "#ffbe7d", "#8cd17d", "#f1ce63", "#d4a6c8", "#ff9d9a",
                   "#86bcb6", "#d7b5a6")
NO_PARTITION = "#d7d7d7"

def category(node: Node) -> str:
    if has_head_role(node):
        return "service"
    if node.has("nvidia") or node.has("slurm.compute"):
        return "gpu"
    if node.has("mkv.volume"):
        return "storage"
    return "other"


def legend(used: set[str]) -> list[tuple[str, str]]:
    """The legend entries of the categories ``used``, in a fixed order."""
    return [(fill, label) for name, fill, label in CATEGORIES if name in used]
