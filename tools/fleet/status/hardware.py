"""``fleet status --hardware`` and ``fleet node show --hardware``: each node's hardware
facts as its minion reports them (one ``salt -L NODES grains.item ...`` for all) against
its inventory entry and profile (fleet.discover.drift); a minion that does not answer has
no value (the minion column says why)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fleet.discover.drift import Drift, compare, from_grains
from fleet.inventory.model import Inventory
from fleet.master.runner import Runner

# Salt's core grains, and salt/_grains/fleet_hw.py's (a minion without it: not compared)
GRAINS = ("serialnumber", "hwaddr_interfaces", "mem_total", "num_gpus", "fleet_ib_guids",
          "fleet_disk_serials")


def drift(runner: Runner, inv: Inventory, names: Sequence[str], timeout: float,
          gather: float | None = None) -> dict[str, list[Drift]]:
    """Each answering node's drifts (none: [])."""
    from fleet.master.salt import Salt

    asked = [n for n in names if inv.nodes[n].state != "planned"]
    data: dict[str, Any] = Salt(runner).call(asked, "grains.item", *GRAINS, timeout=timeout,
                                             gather=gather)
    return {n: compare(inv.nodes[n], from_grains(g)) for n in asked
            if isinstance(g := data.get(n), dict)}
