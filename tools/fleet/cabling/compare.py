"""Each NIC's inventoried switch and port against the LLDP neighbours its node heard.

Per expected NIC: ``ok``, ``wrong_port`` (the right switch, another port),
``wrong_switch``, ``unreadable_port`` (the right switch, a port ID with no port number),
``missing`` (no neighbour heard on it) or ``not_observed`` (no LLDP report from the node
at all: nothing is known). Per neighbour heard on an interface the inventory does not
cable, or from a node it does not know, or a second one on an expected NIC:
``unexpected``.

A neighbour is a switch of the inventory when its system name is the switch's name or
starts with ``<name>.`` (an FQDN), or when ``switch_ids`` maps its chassis ID to one. Its
port number is read from the port ID when that is an interface name, else from the port
description, by ``port_number`` (default :func:`trailing_port`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from fleet.cabling.lldp import Neighbour
from fleet.cabling.nics import on_node
from fleet.inventory.model import Inventory

Status = Literal["ok", "wrong_port", "wrong_switch", "unreadable_port", "missing",
                 "not_observed", "unexpected"]
Key = tuple[str, str]  # (node, interface name on the node)
Where = tuple[str, int]  # (switch, port)

_TRAILING = re.compile(r"(\d+)(?::\d+)?$")  # ethernet1/1/12, swp12, Eth1/12, 1/1/12:1


def trailing_port(name: str) -> int | None:
    """The port number at the end of an interface name: ``ethernet1/1/12`` (Dell OS10),
    ``swp12`` (Cumulus), ``Eth1/12``; a breakout ``ethernet1/1/12:1`` is its cage, 12.
    SONiC's ``Ethernet<lane>`` names need a mapping of their own."""
    m = _TRAILING.search(name.strip())
    return int(m.group(1)) if m else None


@dataclass(frozen=True, slots=True)
class Finding:
    node: str
    interface: str
    status: Status
    expected: Where | None  # the inventory's switch and port (None: not cabled there)
    seen_switch: str | None = None  # the inventory's switch name, or the neighbour's own
    seen_port: int | None = None
    seen_port_id: str | None = None  # the port as the neighbour named it


def expected_links(inv: Inventory, boot_nic_name: str) -> dict[Key, Where]:
    """Every Ethernet NIC the inventory cables (switch and port) by its name on the node
    (:func:`fleet.cabling.nics.on_node`). BMC ports are the BMC's, never the host's."""
    out: dict[Key, Where] = {}
    for node in inv.nodes.values():
        for nic, iface in node.interfaces.items():
            if iface.kind != "ethernet" or iface.switch is None or iface.port is None:
                continue
            out[(node.hostname, on_node(node, nic, boot_nic_name))] = (iface.switch, iface.port)
    return out


class _Reader:
    def __init__(self, switches: Collection[str], switch_ids: Mapping[str, str],
                 port_number: Callable[[str], int | None]) -> None:
        self.switches = {s.lower(): s for s in switches}
        self.ids = {k.lower(): v for k, v in switch_ids.items()}
        self.port_number = port_number

    def switch(self, n: Neighbour) -> str | None:
        if n.chassis_name:
            name = n.chassis_name.lower()
            short = name.split(".", 1)[0]
            if name in self.switches or short in self.switches:
                return self.switches.get(name) or self.switches[short]
        if n.chassis_id and n.chassis_id.lower() in self.ids:
            return self.ids[n.chassis_id.lower()]
        return None

    def port(self, n: Neighbour) -> tuple[int | None, str | None]:
        text = n.port_id if n.port_id_type in (None, "ifname") else n.port_descr
        text = text if text is not None else n.port_descr
        return (self.port_number(text) if text else None), text

    def finding(self, key: Key, want: Where | None, n: Neighbour) -> Finding:
        sw = self.switch(n)
        port, port_text = self.port(n)
        seen = sw or n.chassis_name or n.chassis_id
        if want is None:
            status: Status = "unexpected"
        elif sw != want[0]:
            status = "wrong_switch"
        elif port is None:
            status = "unreadable_port"
        else:
            status = "ok" if port == want[1] else "wrong_port"
        return Finding(key[0], key[1], status, want, seen, port, port_text)


def where(n: Neighbour, switches: Collection[str],
          port_number: Callable[[str], int | None] = trailing_port) -> Where | None:
    """The inventory switch and port neighbour ``n`` names (None: not one of ``switches``,
    or no port number): the reading :func:`compare` uses (fleet discover's match too)."""
    read = _Reader(switches, {}, port_number)
    switch, (port, _) = read.switch(n), read.port(n)
    return (switch, port) if switch is not None and port is not None else None


def compare(expected: Mapping[Key, Where], observed: Mapping[str, Sequence[Neighbour]], *,
            switches: Collection[str], switch_ids: Mapping[str, str] | None = None,
            port_number: Callable[[str], int | None] = trailing_port) -> list[Finding]:
    """One finding per expected NIC (in ``expected``'s order), then one per unexpected
    neighbour (by node and interface). ``observed``: each reporting node's neighbours;
    ``switches``: the inventory's switch names."""
    read = _Reader(switches, switch_ids or {}, port_number)
    heard: dict[Key, list[Neighbour]] = {}
    for node, found in observed.items():
        for n in found:
            heard.setdefault((node, n.interface), []).append(n)
    out: list[Finding] = []
    for key, want in expected.items():
        if key[0] not in observed:
            out.append(Finding(key[0], key[1], "not_observed", want))
            continue
        here = heard.get(key, [])
        if not here:
            out.append(Finding(key[0], key[1], "missing", want))
            continue
        results = [read.finding(key, want, n) for n in here]
        best = min(results, key=lambda f: _RANK[f.status])
        out.append(best)
        out += [Finding(f.node, f.interface, "unexpected", want, f.seen_switch, f.seen_port,
                        f.seen_port_id) for f in results if f is not best]
    extra = sorted(k for k in heard if k not in expected)
    for key in extra:
        out += [read.finding(key, None, n) for n in heard[key]]
    return out


_RANK: dict[Status, int] = {"ok": 0, "wrong_port": 1, "unreadable_port": 2, "wrong_switch": 3,
                            "missing": 4, "not_observed": 5, "unexpected": 6}
