"""Which nodes go out together: pure functions of the inventory and the options.

A wave takes up to K nodes of each Slurm partition (nodes outside Slurm form one group
of their own, "-"), in inventory order, so that never more than K nodes of one
partition are out at once: the next wave starts only when the whole wave is back."""

from __future__ import annotations

from collections.abc import Iterable

from fleet.inventory.head import head_reasons
from fleet.inventory.model import Inventory, Node

NO_PARTITION = "-"


def group_of(node: Node) -> str:
    return node.partition or NO_PARTITION


def waves(nodes: Iterable[Node], k: int) -> list[list[str]]:
    """``k`` nodes per partition per wave, in the given order."""
    if k < 1:
        raise ValueError("a wave has at least one node per partition")
    queues: dict[str, list[str]] = {}
    for n in nodes:
        queues.setdefault(group_of(n), []).append(n.hostname)
    out: list[list[str]] = []
    while any(queues.values()):
        wave: list[str] = []
        for q in queues.values():
            wave += q[:k]
            del q[:k]
        out.append(wave)
    return out


def reboot_refused(inv: Inventory, nodes: Iterable[Node]) -> list[str]:
    """Nodes ``--reboot`` must not power-cycle: the head nodes (fleet.inventory.head: the
    Salt master, which would be rolling out from a host it resets, PXE, slurmctld, mkv
    masters), each as ``host (why)``."""
    bad = []
    for n in nodes:
        reasons = head_reasons(inv, n)
        if reasons:
            bad.append(f"{n.hostname} ({', '.join(reasons)})")
    return bad


def max_out(waves_: list[list[str]], inv: Inventory) -> dict[str, int]:
    """The most nodes of each partition in one wave (what the tests and the plan print)."""
    most: dict[str, int] = {}
    for w in waves_:
        count: dict[str, int] = {}
        for name in w:
            g = group_of(inv.nodes[name])
            count[g] = count.get(g, 0) + 1
        for g, c in count.items():
            most[g] = max(most.get(g, 0), c)
    return most
