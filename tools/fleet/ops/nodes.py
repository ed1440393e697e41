"""``fleet node list|show``'s records: what the inventory says of each node (group, profile,
roles: its full set, written and derived (fleet.inventory.roles), partition, addresses,
MACs, BMC, switch ports, disks), read from the resolved model (fleet.inventory.model)
alone, and the ``--where FIELD=VALUE`` filters over them."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from typing import Any

from fleet.inventory.model import Interface, Node


def _iface(i: Interface) -> dict[str, Any]:
    return {"nic": i.name, "kind": i.kind, "network": i.network,
            "address": None if i.address is None else str(i.address), "mac": i.mac,
            "switch": i.switch, "port": i.port, "speed_gbps": i.speed_gbps}


def record(node: Node) -> dict[str, Any]:
    """One node, as ``--json`` prints it."""
    bmc = node.interfaces.get("bmc")
    spec = node.profile.bmc
    return {
        "node": node.hostname, "group": node.group, "profile": node.profile_name,
        "roles": list(node.all_roles), "derived_roles": list(node.derived_roles),
        "partition": node.partition, "mkv_array": node.mkv_array,
        "image": node.image,
        "state": node.state, "reason": node.reason,
        "serial": node.serial, "boot_nic": node.boot_nic,
        "address": str(node.address), "mac": node.mac, "ib_guid": node.ib_guid,
        "interfaces": [_iface(i) for i in node.interfaces.values() if i.name != "bmc"],
        "bmc": {"address": None if bmc is None or bmc.address is None else str(bmc.address),
                "mac": node.bmc_mac, "protocol": spec.protocol, "kind": spec.kind,
                "user": spec.user, "switch": None if bmc is None else bmc.switch,
                "port": None if bmc is None else bmc.port},
        "disks": [{"role": d.role, "kind": d.kind, "size_gb": d.size_gb, "count": d.count}
                  for d in node.profile.disks],
    }


def _nics(r: dict[str, Any], key: str) -> list[str]:
    return [str(i[key]) for i in [*r["interfaces"], r["bmc"]] if i.get(key) is not None]


# --where FIELD: the values of a record it matches against (any of them may match)
FIELDS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "node": lambda r: [r["node"]],
    "group": lambda r: [r["group"]],
    "profile": lambda r: [r["profile"]],
    "role": lambda r: list(r["roles"]),
    "partition": lambda r: [r["partition"] or "-"],
    "array": lambda r: [r["mkv_array"] or "-"],
    "image": lambda r: [r["image"] or "-"],
    "state": lambda r: [r["state"]],
    "switch": lambda r: _nics(r, "switch"),
    "network": lambda r: [i["network"] for i in r["interfaces"]],
    "address": lambda r: _nics(r, "address"),
    "mac": lambda r: _nics(r, "mac"),
    "bmc-protocol": lambda r: [r["bmc"]["protocol"]],
}


class WhereError(ValueError):
    pass


def parse_where(items: Iterable[str]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        field, eq, value = item.partition("=")
        if not eq or not value:
            raise WhereError(f"--where {item!r}: give FIELD=VALUE (VALUE may be a glob)")
        if field not in FIELDS:
            raise WhereError(f"--where {item!r}: no field {field!r}; one of "
                             f"{', '.join(FIELDS)}")
        out.append((field, value))
    return out


def matches(r: dict[str, Any], where: list[tuple[str, str]]) -> bool:
    """Every FIELD=VALUE holds: VALUE (a glob; '-' for none) matches one of FIELD's values."""
    return all(any(fnmatch.fnmatchcase(v, value) for v in FIELDS[field](r))
               for field, value in where)


def _port(r: dict[str, Any], kind: str) -> str:
    ports = [f"{i['switch']}:{i['port']}" for i in r["interfaces"]
             if i["kind"] == kind and i["switch"] is not None and i["port"] is not None]
    return ",".join(ports) or "-"


def list_table(records: list[dict[str, Any]]) -> str:
    cols = ("node", "group", "profile", "partition", "address", "bmc", "port", "ib port")
    rows = [(r["node"], r["group"], r["profile"], r["partition"] or "-", r["address"],
             r["bmc"]["address"] or "-", _port(r, "ethernet"), _port(r, "infiniband"))
            for r in records]
    widths = [max([len(c)] + [len(row[k]) for row in rows]) for k, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
              for row in rows]
    lines.append(f"{len(records)} node(s)")
    return "\n".join(lines)


def show_text(r: dict[str, Any]) -> str:
    b = r["bmc"]
    cabled = f", {b['switch']} port {b['port']}" if b["switch"] and b["port"] else ""
    lines = [
        f"{r['node']}",
        f"  group      {r['group']} (profile {r['profile']}"
        + (f", image {r['image']}" if r["image"] else "") + ")",
        f"  roles      {', '.join(x for x in r['roles'] if x not in r['derived_roles'])}",
        f"  derived    {', '.join(r['derived_roles']) or '-'}",
        f"  partition  {r['partition'] or '-'}" + (f"   mkv array {r['mkv_array']}"
                                                  if r["mkv_array"] else ""),
        f"  state      {r['state']}" + (f" ({r['reason']})" if r["reason"] else ""),
        f"  serial     {r['serial']}",
    ]
    for i in r["interfaces"]:
        where = f"{i['switch']} port {i['port']}" if i["switch"] and i["port"] else "not cabled"
        boot = " (boot)" if i["nic"] == r["boot_nic"] else ""
        lines.append(f"  {i['nic']:<10} {i['address'] or '-'} on {i['network']}, "
                     f"mac {i['mac'] or '-'}, {where}{boot}")
    lines.append(f"  bmc        {b['address'] or '-'} ({b['protocol']}, {b['kind']}, user "
                 f"{b['user']}), mac {b['mac']}{cabled}")
    if r["ib_guid"]:
        lines.append(f"  ib guid    {r['ib_guid']}")
    for d in r["disks"]:
        lines.append(f"  disk       {d['role']}: {d['count']} x {d['kind']} {d['size_gb']} GB")
    return "\n".join(lines)
