"""The short report printed after a render: nodes per role/partition, mkv capacity."""

from __future__ import annotations

from collections import Counter
from typing import Any

from fleet.inventory.model import Inventory


def summarize(inv: Inventory) -> dict[str, Any]:
    roles: Counter[str] = Counter()
    for node in inv.nodes.values():
        roles.update(node.roles)
    partitions = {}
    if inv.raw.slurm is not None:
        for name in inv.raw.slurm.partitions:
            members = inv.in_partition(name)
            gpus = sum(n.profile.gpu.count for n in members if n.profile.gpu)
            partitions[name] = {"nodes": len(members), "gpus": gpus}
    arrays = {}
    if inv.raw.mkv is not None:
        for name, array in inv.raw.mkv.arrays.items():
            vols = inv.in_array(name)
            raw_tb = sum(d.size_gb for n in vols for d in n.profile.data_disks) / 1000
            gbps = sum(n.profile.read_gbps or 0 for n in vols)
            arrays[name] = {
                "volumes": len(vols),
                "disks_per_volume": len(vols[0].profile.data_disks) if vols else 0,
                "replicas": array.replicas,
                "raw_tb": round(raw_tb, 2),
                "usable_tb": round(raw_tb / array.replicas, 2),
                "read_gbit_s": gbps,
                "read_gbyte_s": round(gbps / 8, 1),
            }
    return {"nodes": len(inv.nodes), "roles": dict(sorted(roles.items())),
            "partitions": partitions, "mkv_arrays": arrays}


def format_summary(s: dict[str, Any]) -> str:
    lines = [f"nodes: {s['nodes']}"]
    lines.append("roles: " + ", ".join(f"{r} {n}" for r, n in s["roles"].items()))
    for name, p in s["partitions"].items():
        lines.append(f"partition {name}: {p['nodes']} nodes, {p['gpus']} GPUs")
    total_raw = 0.0
    for name, a in s["mkv_arrays"].items():
        total_raw += a["raw_tb"]
        lines.append(
            f"mkv {name}: {a['volumes']} volumes x {a['disks_per_volume']} disks, "
            f"{a['raw_tb']:,.0f} TB raw, replicas {a['replicas']} -> {a['usable_tb']:,.0f} TB "
            f"usable, read {a['read_gbit_s']:,.0f} Gbit/s ({a['read_gbyte_s']:,.0f} GB/s)")
    if s["mkv_arrays"]:
        lines.append(f"mkv total: {total_raw:,.0f} TB raw")
    return "\n".join(lines)
