"""``fleet ports``: every port of every switch and IB switch of the inventory, used (by
which node and NIC) or free. The cabling is the resolved model's (each Interface's switch
and port: the group's first_port + position, or the node's own port), never recomputed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleet.inventory.expand import iter_nics
from fleet.inventory.model import Inventory


@dataclass(frozen=True, slots=True)
class Port:
    switch: str
    port: int
    node: str | None  # None: free
    nic: str | None


@dataclass(frozen=True, slots=True)
class SwitchPorts:
    name: str
    kind: str
    model: str
    ports: list[Port]

    @property
    def free(self) -> list[int]:
        return [p.port for p in self.ports if p.node is None]

    def as_json(self) -> dict[str, Any]:
        return {"switch": self.name, "kind": self.kind, "model": self.model,
                "ports": len(self.ports), "used": len(self.ports) - len(self.free),
                "free": self.free,
                "cabled": [{"port": p.port, "node": p.node, "nic": p.nic}
                           for p in self.ports if p.node is not None]}


def switch_ports(inv: Inventory, names: list[str] | None = None) -> list[SwitchPorts]:
    """The switches ``names`` (default: all), in inventory order."""
    used: dict[tuple[str, int], tuple[str, str]] = {}
    for node, iface in iter_nics(inv.nodes):
        if iface.switch is not None and iface.port is not None:
            used[(iface.switch, iface.port)] = (node.hostname, iface.name)
    out = []
    for name, sw in inv.raw.switches.items():
        if names is not None and name not in names:
            continue
        ports = []
        for n in range(1, sw.ports + 1):
            holder, nic = used.get((name, n), (None, None))
            ports.append(Port(name, n, holder, nic))
        out.append(SwitchPorts(name, sw.kind, sw.model, ports))
    return out


def ranges(numbers: list[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``1-3,7``."""
    parts: list[str] = []
    start = prev = None
    for n in [*numbers, None]:
        if n is not None and prev is not None and n == prev + 1:
            prev = n
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = n
    return ",".join(parts) or "none"


def table(switches: list[SwitchPorts], *, free_only: bool = False) -> str:
    lines: list[str] = []
    for sw in switches:
        used = len(sw.ports) - len(sw.free)
        lines.append(f"{sw.name} ({sw.kind}, {sw.model}): {len(sw.ports)} ports, {used} used, "
                     f"{len(sw.free)} free: {ranges(sw.free)}")
        if free_only:
            continue
        for p in sw.ports:
            lines.append(f"  {p.port:>4}  {p.node}  {p.nic}" if p.node else f"  {p.port:>4}  free")
    return "\n".join(lines)
