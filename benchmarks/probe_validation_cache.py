"""Would a per-node cache of the validation pay? (issue 37, the one-node edit)

Measures, in one process with the garbage collector off (as ``fleet`` runs), the CPU time
of each stage of validating an inventory, and next to the expansion the least a per-node
cache of it would cost on a hit: the key (each node's facts as JSON, hashed), reading and
checking the cache file (JSON, one SHA-256 over it), and building the same ``Node`` and
``Interface`` objects from it that the renderers and the cross-node checks read. Writing
the cache (after an edit) is timed apart, and pickle's ``loads`` of the interfaces alone
as the floor of any rebuild (pickle itself is ruled out: the file lies beside the output,
and unpickling a hostile one runs code).

The cache here is deliberately incomplete (no group, profile or network in the key, no
``origin`` rebuilt faithfully): it is a lower bound of the real one's cost, not a cache.

    .venv/bin/python benchmarks/gen_inventory.py --nodes 10000 -o /tmp/inv10k.yaml
    .venv/bin/python benchmarks/probe_validation_cache.py /tmp/inv10k.yaml --runs 5
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import pickle
import statistics
import time
from collections.abc import Callable
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from typing import Any

from fleet.inventory import checks, schema
from fleet.inventory.expand import expand
from fleet.inventory.load import parse, read_text
from fleet.inventory.model import Interface, Node
from fleet.yamlsrc import Source, load


def cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def entries(nodes: dict[str, Node]) -> dict[str, list[list[Any]]]:
    return {h: [[i.name, i.kind, i.network, str(i.address), str(i.cidr), i.mac, i.switch,
                 i.port] for i in n.interfaces.values()] for h, n in nodes.items()}


def rebuild(doc: dict[str, list[list[Any]]], nodes: dict[str, Node]) -> dict[str, Node]:
    """The objects a hit must give back; schema parts (facts, profile) taken from the live
    model, so this is cheaper than a real rebuild."""
    cidrs: dict[str, IPv4Network] = {}
    out: dict[str, Node] = {}
    for h, rows in doc.items():
        n = nodes[h]
        ifs: dict[str, Interface] = {}
        for name, kind, net, addr, cidr, mac, sw, port in rows:
            c = cidrs.get(cidr) or cidrs.setdefault(cidr, IPv4Network(cidr))
            ifs[name] = Interface(name=name, kind=kind, network=net, address=IPv4Address(addr),
                                  cidr=c, gateway=None, vlan=None, mtu=1500, mac=mac,
                                  switch=sw, port=port, speed_gbps=None)
        out[h] = Node(hostname=h, index=n.index, position=n.position, group=n.group,
                      profile_name=n.profile_name, profile=n.profile, roles=n.roles,
                      serial=n.serial, mac=n.mac, bmc_mac=n.bmc_mac, ib_guid=n.ib_guid,
                      interfaces=ifs, boot_nic=n.boot_nic, partition=n.partition,
                      mkv_array=n.mkv_array, boot_disk=n.boot_disk, facts=n.facts,
                      origin=dict(n.origin), image=n.image, state=n.state, reason=n.reason)
    return out


def one_run(text: str) -> dict[str, float]:
    row: dict[str, float] = {}
    row["parse (all)"], _ = cpu(lambda: parse(text, "inventory.yaml"))
    row["yaml"], src = cpu(lambda: load(text, "inventory.yaml"))
    row["pydantic"], raw = cpu(lambda: schema.Inventory.model_validate(src.data))
    row["expansion"], (nodes, _p) = cpu(lambda: expand(raw, src))
    row["checks"], _ = cpu(lambda: _checks(raw, nodes, src))
    row["hit: key"], _ = cpu(lambda: {h: hashlib.sha256(f.model_dump_json().encode())
                                      .hexdigest() for h, f in raw.nodes.items()})
    blob = json.dumps(entries(nodes))
    row["hit: read+verify"], doc = cpu(
        lambda: (hashlib.sha256(blob.encode()).hexdigest(), json.loads(blob))[1])
    row["hit: rebuild"], _ = cpu(lambda: rebuild(doc, nodes))
    row["hit: total"] = row["hit: key"] + row["hit: read+verify"] + row["hit: rebuild"]
    row["write (after an edit)"], _ = cpu(lambda: json.dumps(entries(nodes)))
    pickled = pickle.dumps({h: n.interfaces for h, n in nodes.items()}, protocol=5)
    row["floor: pickle.loads"], _ = cpu(lambda: pickle.loads(pickled))
    return row


def _checks(raw: schema.Inventory, nodes: dict[str, Node], src: Source) -> object:
    return checks.run_all(checks.Ctx(raw=raw, nodes=nodes, src=src))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inventory", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    text = read_text(args.inventory)
    gc.disable()
    parse(text, "inventory.yaml")  # warm
    rows = [one_run(text) for _ in range(args.runs)]
    print(f"CPU seconds, median of {args.runs} (min-max), {args.inventory}")
    for key in rows[0]:
        vals = [r[key] for r in rows]
        print(f"  {key:<24} {statistics.median(vals):6.3f}  ({min(vals):.3f}-{max(vals):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
