"""Where each machine and switch sits: its rack and units, derived from the inventory.

A node group's ``place`` stacks its machines upward from ``first_unit``, ``height_u`` (the
profile's) apart, ``per_rack`` to a rack (default: as many as fit), filling its racks in
order; ``nodes.<name>.place`` puts one machine elsewhere. A switch has its own ``place``.
:func:`layout` is the one derivation; :func:`check_racks` (a rule of ``checks.RULES``) and
the rack elevations (``fleet.render.pictures``) both read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from fleet.inventory import schema
from fleet.inventory.model import Node, YamlPath
from fleet.problems import Problem, Reporter


class Placed(NamedTuple):
    """One device in a rack: units ``unit`` to ``top`` (inclusive)."""

    name: str  # hostname or switch name
    kind: str  # "node" or "switch"
    rack: str
    unit: int
    height: int
    origin: YamlPath  # where its unit comes from (for errors)
    rack_origin: YamlPath  # where its rack is named

    @property
    def top(self) -> int:
        return self.unit + self.height - 1


class Layout(NamedTuple):
    placed: list[Placed]  # nodes in inventory order, then switches
    unplaced: list[tuple[str, YamlPath, str]]  # (hostname, group path, why): racks ran out


def layout(raw: schema.Inventory, nodes: dict[str, Node]) -> Layout:
    """Every placed device; a group machine past its last rack is unplaced (with why)."""
    placed: list[Placed] = []
    unplaced: list[tuple[str, YamlPath, str]] = []
    members: dict[str, list[Node]] = {}
    for node in nodes.values():
        members.setdefault(node.group, []).append(node)
    for gname, group in raw.node_groups.items():
        _group(raw, gname, group, members.get(gname, []), placed, unplaced)
    for sname, sw in raw.switches.items():
        if sw.place is not None:
            path: YamlPath = ("switches", sname, "place")
            placed.append(Placed(sname, "switch", sw.place.rack, sw.place.unit, sw.height_u,
                                 (*path, "unit"), (*path, "rack")))
    order = {name: i for i, name in enumerate(nodes)}
    placed.sort(key=lambda p: (p.kind != "node", order.get(p.name, 0)))
    return Layout(placed, unplaced)


def _group(raw: schema.Inventory, gname: str, group: schema.NodeGroup, members: list[Node],
           placed: list[Placed], unplaced: list[tuple[str, YamlPath, str]]) -> None:
    """The group's machines by their position in it: a machine with its own place leaves
    its slot empty, and a selection of the group (an overlay) moves no machine."""
    gpath: YamlPath = ("node_groups", gname, "place")
    rule = group.place
    for node in members:
        own = node.facts.place
        height = node.profile.height_u
        if own is not None:
            path: YamlPath = ("nodes", node.hostname, "place")
            placed.append(Placed(node.hostname, "node", own.rack, own.unit, height,
                                 (*path, "unit"), (*path, "rack")))
            continue
        if rule is None:
            continue
        slot = _slot(raw, rule, height, node.position)
        if slot is None:
            held = f"{rule.per_rack} each" if rule.per_rack else "as many as fit"
            unplaced.append((node.hostname, (*gpath, "racks"),
                             f"{node.hostname} has no rack left: the {len(rule.racks)} "
                             f"rack(s) of group {gname} are full ({held})"))
            continue
        i, unit = slot
        placed.append(Placed(node.hostname, "node", rule.racks[i], unit, height,
                             (*gpath, "per_rack" if rule.per_rack else "first_unit"),
                             (*gpath, "racks", i)))


def _slot(raw: schema.Inventory, rule: schema.GroupPlace, height: int,
          position: int) -> tuple[int, int] | None:
    """(index in rule.racks, unit) of the group's machine at ``position``; None past the
    last rack. A rack holds per_rack machines, or as many as fit above first_unit (at
    least one: one that does not fit is reported as over the top)."""
    if rule.per_rack is not None:
        i, k = divmod(position, rule.per_rack)
        return (i, rule.first_unit + k * height) if i < len(rule.racks) else None
    left = position
    for i, name in enumerate(rule.racks):
        rack = raw.racks.get(name)
        if rack is None:  # reported as unknown; the rest stack in it
            return i, rule.first_unit + left * height
        room = max((rack.height_u - rule.first_unit + 1) // height, 1)
        if left < room:
            return i, rule.first_unit + left * height
        left -= room
    return None


def check_racks(c: Reporter, raw: schema.Inventory, nodes: dict[str, Node]) -> Iterator[Problem]:
    """Each device in a declared rack, inside its height, and in units no other device
    takes; a group's racks hold all its machines."""
    lay = layout(raw, nodes)
    for _host, path, why in lay.unplaced:
        yield c.problem(path, why, code="rack_full",
                        hint="add a rack to the list, or raise per_rack")
    unknown: set[YamlPath] = set()
    for gname, group in raw.node_groups.items():
        for i, name in enumerate(group.place.racks if group.place else ()):
            if name not in raw.racks:
                unknown.add(("node_groups", gname, "place", "racks", i))
                yield _unknown(c, ("node_groups", gname, "place", "racks", i), name)
    taken: dict[tuple[str, int], Placed] = {}
    for p in lay.placed:
        rack = raw.racks.get(p.rack)
        if rack is None:
            if p.rack_origin not in unknown:
                unknown.add(p.rack_origin)
                yield _unknown(c, p.rack_origin, p.rack)
            continue
        if p.top > rack.height_u:
            yield c.problem(p.origin, f"{p.name} (U{p.unit}, {p.height}U high) reaches "
                            f"U{p.top}, above the top of rack {p.rack} "
                            f"({rack.height_u}U)", code="rack_overflow",
                            hint="lower its unit, or give the rack its real height_u")
            continue
        yield from _collisions(c, p, taken)


def _unknown(c: Reporter, path: YamlPath, name: str) -> Problem:
    return c.problem(path, f"unknown rack {name!r}", code="unknown_ref",
                     hint="declare it under racks:, or check its spelling")


def _collisions(c: Reporter, p: Placed, taken: dict[tuple[str, int], Placed]
                ) -> Iterator[Problem]:
    for u in range(p.unit, p.top + 1):
        other = taken.get((p.rack, u))
        if other is not None:
            yield c.problem(p.origin, f"{p.name} (U{p.unit}-U{p.top}) overlaps {other.name} "
                            f"({c.src.pos(other.origin)}) at U{u} of rack {p.rack}: "
                            f"{other.name} takes U{other.unit}-U{other.top}",
                            code="rack_collision",
                            hint="two devices cannot share a rack unit")
            return
    for u in range(p.unit, p.top + 1):
        taken[(p.rack, u)] = p
