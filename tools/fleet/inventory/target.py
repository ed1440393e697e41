"""TARGET of ``fleet apply``: inventory hostnames, ranges and globs, comma-separated.

``tbox-001``, ``tbox-[001-038]`` (the inventory's own range syntax), ``stor-*`` or
``tbox-0?1``; ``a,b`` is the union, in inventory order. Every item must name at least one
node of the inventory: a typo is an error, never an empty run."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable

from fleet.inventory.expand import expand_hosts

_RANGE = re.compile(r"\[\d+-\d+\]")


class TargetError(ValueError):
    """An item of the target that names no node, or a malformed range."""


def resolve(target: str, hostnames: Iterable[str],
            retired: Iterable[str] = ()) -> list[str]:
    """The inventory hostnames ``target`` names, in inventory order; a name or range item
    naming a ``retired`` node is an error that says so."""
    names = list(hostnames)
    gone = set(retired)
    known = set(names)
    chosen: set[str] = set()
    items = [i.strip() for i in target.split(",")]
    if not any(items):
        raise TargetError("empty target")
    for item in items:
        if not item:
            raise TargetError(f"empty item in target {target!r}")
        if _RANGE.search(item):
            try:
                wanted = [h for h, _ in expand_hosts(item)]
            except ValueError as exc:
                raise TargetError(str(exc)) from None
            missing = [h for h in wanted if h not in known]
            if set(missing) & gone:
                raise TargetError(f"{item}: retired (nodes.<name>.state): "
                                  f"{', '.join(h for h in missing if h in gone)}")
            if missing:
                raise TargetError(f"{item}: not in the inventory: {', '.join(missing[:5])}"
                                  + (f" and {len(missing) - 5} more" if len(missing) > 5
                                     else ""))
            chosen.update(wanted)
        elif any(c in item for c in "*?["):
            hits = fnmatch.filter(names, item)
            if not hits:
                raise TargetError(f"{item}: matches no node of the inventory")
            chosen.update(hits)
        elif item in known:
            chosen.add(item)
        elif item in gone:
            raise TargetError(f"{item}: retired (nodes.{item}.state)")
        else:
            raise TargetError(f"{item}: no such node in the inventory")
    return [n for n in names if n in chosen]
