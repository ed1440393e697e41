"""The compute layer's pillar: ``pillar/compute.sls`` (every node with a compute role) and
each such node's ``node:compute`` (the addresses it uses to reach the central Valkey and
the code sync).

Valkey and the rsync daemon take no password (miniray sends none), so what may connect
is decided here, from the inventory: the CIDRs of the cluster networks
(:func:`fleet.inventory.compute.cluster_networks`), rendered into the firewall and into
rsync's ``hosts allow``.
"""

from __future__ import annotations

from typing import Any

from fleet.inventory import compute as facts
from fleet.inventory import lifecycle
from fleet.inventory.model import Inventory, Node
from fleet.render.hostlist import compress


def _artifact(a: Any) -> dict[str, str] | None:
    return None if a is None else {"source": a.source, "sha256": a.sha256}


def _shared_address(inv: Inventory, server: Node, node: Node) -> str:
    """The server's address on the first cluster network that ``node`` is on too (the
    validate rule 'unreachable' guarantees one for every worker)."""
    nets = facts.cluster_networks(inv.raw)
    mine = {i.network for i in node.interfaces.values()}
    for iface in server.interfaces.values():
        if iface.network in nets and iface.network in mine and iface.address is not None:
            return str(iface.address)
    return facts.addresses_on(inv.raw, server)[0]


def pillar(inv: Inventory) -> dict[str, Any]:
    """pillar/compute.sls."""
    comp = inv.raw.compute
    assert comp is not None
    valkey = inv.nodes[comp.valkey.host]
    sync = inv.nodes[comp.codesync.host]
    nets = facts.cluster_networks(inv.raw)
    return {
        "allow": [str(inv.raw.networks[n].cidr) for n in nets],
        "valkey": {
            "host": valkey.hostname,
            "bind": facts.addresses_on(inv.raw, valkey),
            "port": facts.VALKEY_PORT,
            "maxmemory_mb": comp.valkey.maxmemory_mb,
            "max_clients": comp.valkey.max_clients,
            "artifact": _artifact(comp.valkey.artifact),
        },
        "codesync": {
            "host": sync.hostname,
            "bind": facts.addresses_on(inv.raw, sync)[0],
            "port": facts.RSYNC_PORT,
            "nfs_port": facts.NFS_PORT,
            "export": comp.codesync.export,
            "prune_days": comp.codesync.prune_days,
            "fs": comp.codesync.fs,
            "device": comp.codesync.device,
            "job_copy": comp.codesync.job_copy,
        },
        "worker": {"queue": comp.queue, "task_user": comp.task_user,
                   "partition": comp.partition, "miniray": _artifact(comp.miniray)},
        "uv": _artifact(comp.uv),
        "python_cache": {
            "url": facts.python_cache_url(inv.raw, inv.nodes[inv.raw.site.provisioning_host]),
            "offline": comp.python_cache.offline},
        "triton": {"mode": comp.triton.mode, "artifact": _artifact(comp.triton.artifact),
                   "image": comp.triton.image, "ports": dict(facts.TRITON_PORTS)},
    }


def node_pillar(inv: Inventory, node: Node) -> dict[str, Any] | None:
    """node:compute of a worker: where it reaches Valkey (REDIS_HOST) and the rsync module,
    and whether its miniray worker manages Triton (None: not a worker)."""
    comp = inv.raw.compute
    if comp is None or not facts.is_worker(inv.raw, node):
        return None
    return {
        "redis_host": _shared_address(inv, inv.nodes[comp.valkey.host], node),
        "codesync_host": _shared_address(inv, inv.nodes[comp.codesync.host], node),
        "triton_server_enabled": facts.miniray_manages_triton(inv.raw, node),
    }


def provisioning_pillar(inv: Inventory) -> dict[str, Any] | None:
    """provisioning:python_cache: where the provisioning host keeps the cache and the path
    its nginx serves it at (None: no compute section, no cache)."""
    comp = inv.raw.compute
    if comp is None:
        return None
    return {"dir": comp.python_cache.dir, "path": facts.PYCACHE_PATH}


def has_role(inv: Inventory, node: Node) -> bool:
    return bool(facts.roles(inv.raw, node))


def slurm_preempt(inv: Inventory) -> dict[str, str] | None:
    """pillar slurm:preempt: the workers' preemptible partition and its nodes, a node in
    burn-in not among them (None: no compute section, or no such worker node: a partition
    of no nodes is no slurm.conf line)."""
    comp = inv.raw.compute
    if comp is None:
        return None
    workers = [n.hostname for n in inv.nodes.values()
               if facts.is_worker(inv.raw, n) and lifecycle.in_user_partitions(n)]
    return {"partition": comp.partition, "nodes": compress(workers)} if workers else None
