"""The Salt master's and the minions' sizing keys: one definition, rendered into pillar
``site:salt:sizing`` (``provisioning.master`` and ``base.minion`` take them from there).
Each value is explained in docs/salt.md ("Sizing"), from the figures of
``make bench-fanout`` (docs/benchmarks.md, "Fan-out").

The master's keys follow the node count (they live in the master's config only). The
minions' keys are in every node's minion config and installer seed: they follow the
site's *capacity* (:func:`minion_capacity`, the machines its switches can cable), never
the node count, so adding or retiring a node rewrites no other node's files and restarts
no minion."""

from __future__ import annotations

import math
from typing import Any

from fleet.inventory.model import Inventory

# what one master worker process costs and carries (bench-fanout, Salt 3008.4)
MINIONS_PER_WORKER = 20
MIN_WORKERS = 5              # Salt's default
# returns and find_job answers one busy master takes in (bench-fanout: 144 pings back in
# ~1-2 s on 2 loaded cores); the timeouts below leave ample room for a slow minion
AUTH_PER_SECOND = 10         # sign-ins the master serves per second while minions start


# The last inventory's capacity: every node's minion config asks, and the answer walks the
# whole inventory (holding the inventory keeps its id from being reused).
_last: list[tuple[Inventory, int]] = []


def minion_capacity(inv: Inventory) -> int:
    """The most minions the site can hold: the ports of the Ethernet switches its
    provisioning NICs are cabled to (every node has one such NIC on one port), or the
    node count where that is more (nodes without a switch). It changes when a switch is
    added, not when a node is."""
    if _last and _last[0][0] is inv:
        return _last[0][1]
    capacity = _capacity(inv)
    _last[:] = [(inv, capacity)]
    return capacity


def _capacity(inv: Inventory) -> int:
    raw = inv.raw
    switches = {rule.switch for group in raw.node_groups.values()
                for rule in group.nics.values()
                if rule.switch is not None and rule.network in raw.networks
                and raw.networks[rule.network].purpose == "provisioning"}
    ports = sum(inv.raw.switches[s].ports for s in switches if s in inv.raw.switches)
    return max(len(inv.nodes), ports)


def salt_sizing(nodes: int, capacity: int | None = None) -> dict[str, dict[str, Any]]:
    """``{"master": {...}, "minion": {...}}``: the master's for ``nodes`` minions, the
    minions' for a site of ``capacity`` (default ``nodes``)."""
    n = max(1, nodes)
    cap = max(n, capacity or 0)
    master = {
        "worker_threads": max(MIN_WORKERS, n // MINIONS_PER_WORKER),
        "timeout": max(15, math.ceil(n / 20)),
        "gather_job_timeout": max(30, math.ceil(n / 10)),
        "job_cache": True,
        "keep_jobs_seconds": 86400 if n <= 2000 else 21600,
        "zmq_backlog": max(1000, 2 * n),
    }
    minion = {
        # spreads minion restarts after a fatal error (the only use Salt 3008 makes of it)
        "random_reauth_delay": max(10, math.ceil(cap / AUTH_PER_SECOND)),
        "auth_timeout": max(10, math.ceil(cap / AUTH_PER_SECOND)),
        "acceptance_wait_time": 10,
        "acceptance_wait_time_max": 60,
        "recon_default": 1000,
        "recon_max": max(10000, 100 * cap),
        "recon_randomize": True,
    }
    return {"master": master, "minion": minion}


def site_sizing(inv: Inventory) -> dict[str, dict[str, Any]]:
    """The sizing of ``inv``: the master's by its nodes, the minions' by its capacity."""
    return salt_sizing(len(inv.nodes), minion_capacity(inv))
