"""Partners for the burn-in checks between two nodes (ib-write-bw, nccl-pair): each node
under test is paired with another node of its profile on its InfiniBand rail, the partner
running ib_write_bw's server side, or the other half of the two-node Slurm job of
nccl-pair (fleet.burnin.pairjob).

A node's rail is its first InfiniBand NIC's switch (fabric) and IPoIB network: two nodes
on one rail reach each other through that switch, and the client finds the partner at
its IPoIB address (perftest's out-of-band TCP exchange; the RDMA traffic itself is on
the HCAs). A partner is never the node itself, never a node with no address on the
rail, and only a node under test in this run or in ``burn-in``, or,
with ``in_service``, also an ``active`` one: its jobs would share the link, and a pair
test would slow them, so it must be asked for. ``planned`` (no OS) and ``maintenance``
(may be the faulty one) nodes are never partners.

nccl-pair runs as a job of the burn-in partition (fleet.inventory.lifecycle), which holds
the compute nodes in ``burn-in`` and nothing else: both nodes must be in ``burn-in``, so
neither ``in_service`` nor ``testing`` adds a partner to it, and a node under test in
another state has no partner (:func:`why_none` says why).

The partners of a node are its rail's other eligible nodes in inventory order, starting
after the node itself (a ring: over three nodes under test, A tests with B, B with C, C
with A), so each node is server once and client once; the second is tried when the first
pair fails, so one bad node does not fail a good one.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from ipaddress import IPv4Address

from fleet.inventory.lifecycle import in_burnin_partition
from fleet.inventory.model import Inventory, Node
from fleet.inventory.schema.hardware import Profile

PAIR_CHECKS = ("ib-write-bw", "nccl-pair")
JOB_CHECKS = ("nccl-pair",)  # a Slurm job of the two on the burn-in partition
PARTNER_STATES = ("burn-in",)
TRIES = 2  # partners tried per node: a failed pair is retried once with another partner


@dataclass(frozen=True)
class Rail:
    switch: str | None
    network: str

    def __str__(self) -> str:
        return f"{self.switch or '?'}/{self.network}"


@dataclass(frozen=True)
class Partner:
    host: str
    address: IPv4Address  # its IPoIB address on the rail
    ib_guid: str | None


def rail(node: Node) -> Rail | None:
    """The node's first InfiniBand NIC's switch and network (None: it has none)."""
    for nic in node.interfaces.values():
        if nic.kind == "infiniband":
            return Rail(nic.switch, nic.network)
    return None


def rail_gbps(profile: Profile) -> int:
    """The rate a pair is judged against: the profile's first InfiniBand NIC's (0: none)."""
    return next((n.speed_gbps for n in profile.nics.values() if n.kind == "infiniband"), 0)


def _ib_address(node: Node) -> IPv4Address | None:
    ib = [n for n in node.interfaces.values() if n.kind == "infiniband"]
    return ib[0].address if ib else None


def partners(inv: Inventory, host: str, *, testing: Collection[str] = (),
             in_service: bool = False, check: str = "ib-write-bw") -> list[Partner]:
    """``host``'s partners in the order to try them (at most :data:`TRIES`); ``testing``:
    the nodes under test in this run (drained for it: partners whatever their state).
    A check of :data:`JOB_CHECKS`: nodes in burn-in only, and none for a node in another
    state."""
    node = inv.nodes[host]
    mine = rail(node)
    if mine is None:
        return []
    states = (*PARTNER_STATES, "active") if in_service else PARTNER_STATES

    def eligible(n: Node) -> bool:
        if check in JOB_CHECKS:
            return in_burnin_partition(n)
        return n.state in states or n.hostname in testing

    if check in JOB_CHECKS and not in_burnin_partition(node):
        return []
    ring = [n for n in inv.nodes.values()
            if n.hostname == host or (n.profile_name == node.profile_name
                                      and rail(n) == mine and eligible(n)
                                      and _ib_address(n) is not None)]
    at = [n.hostname for n in ring].index(host)
    order = ring[at + 1:] + ring[:at]
    return [Partner(n.hostname, addr, n.ib_guid) for n in order[:TRIES]
            if (addr := _ib_address(n)) is not None]


def why_none(inv: Inventory, host: str, *, in_service: bool = False,
             check: str = "ib-write-bw") -> str:
    """The reason recorded when ``host`` has no partner: a failure, never a pass."""
    node = inv.nodes[host]
    mine = rail(node)
    if mine is None:
        return f"not run: profile {node.profile_name} has no InfiniBand NIC"
    if check in JOB_CHECKS and not in_burnin_partition(node):
        return (f"not run: {host} is {node.state}, not in the burn-in partition its "
                f"two-node job runs on (set nodes.{host}.state: burn-in, render and apply)")
    who = "burn-in or active" if in_service and check not in JOB_CHECKS else "burn-in"
    return (f"not run: no partner of profile {node.profile_name} on rail {mine} "
            f"(another node in {who} on it)")
