"""Overlays: a small YAML file applied on top of the inventory (for the lab, for example).

Semantics are JSON merge patch (RFC 7386): mappings merge recursively, any other value
replaces, ``null`` deletes. One extra top-level key, ``only_nodes: [host, ...]``, keeps
only those machines after expansion. Positions follow the data: a value that came from
the overlay is reported at its line in the overlay file.
"""

from __future__ import annotations

from typing import Any

from fleet.yamlsrc import Path, Source

ONLY_NODES = "only_nodes"


def _drop(src: Source, prefix: Path) -> None:
    n = len(prefix)
    for table in (src.values, src.keys, src.texts):
        for path in [p for p in table if p[:n] == prefix and len(p) > n]:
            del table[path]


def _copy(dst: Source, src: Source, prefix: Path) -> None:
    n = len(prefix)
    for name in ("values", "keys", "texts"):
        into, frm = getattr(dst, name), getattr(src, name)
        for path, pos in frm.items():
            if path[:n] == prefix:
                into[path] = pos


def apply(base: Source, overlay: Source) -> tuple[Source, list[str] | None]:
    """Merge ``overlay`` into ``base`` (which is modified and returned) and return the
    ``only_nodes`` selection, if any."""
    patch = dict(overlay.data or {})
    only = patch.pop(ONLY_NODES, None)

    def merge(target: dict[str, Any], change: dict[str, Any], path: Path) -> None:
        for key, value in change.items():
            kpath = (*path, key)
            if value is None:
                target.pop(key, None)
                _drop(base, kpath)
                for table in (base.values, base.keys, base.texts):
                    table.pop(kpath, None)
            elif isinstance(value, dict) and isinstance(target.get(key), dict):
                base.keys[kpath] = overlay.keys.get(kpath, base.keys.get(kpath, base.pos(kpath)))
                merge(target[key], value, kpath)
            else:
                target[key] = value
                _drop(base, kpath)
                _copy(base, overlay, kpath)

    if not isinstance(base.data, dict):
        return base, only
    merge(base.data, patch, ())
    return base, only
