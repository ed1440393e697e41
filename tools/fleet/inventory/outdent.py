"""A field indented one level too little, said once.

A field written at the level of the entries around it (``nics:`` under ``node_groups:``
beside ``head:``, not under ``head:``) is valid YAML: a new node group called ``nics``.
The schema then finds that group lacking every required field, its children unknown, and
``head`` lacking ``nics``: several errors, none of which says what happened. This module
finds such a key (its name is a field of the schema's entries there, or one the entry just
above it lacks) and replaces those errors with one at the key that moved.
"""

from __future__ import annotations

from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

from fleet.inventory import schema
from fleet.problems import Problem, dotted
from fleet.yamlsrc import Path, Source

Located = tuple[Path, Problem]  # a schema problem and the data path it is about


def _unwrap(tp: Any) -> Any:
    """``X`` of ``Annotated[X, ...]`` and of ``X | None``."""
    while True:
        if get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
        elif get_origin(tp) in (Union, UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def _entry_fields(parent: Path) -> set[str]:
    """The fields of the model whose entries the mapping at ``parent`` holds (``nodes``:
    NodeFacts), or none if it is no such mapping."""
    tp: Any = schema.Inventory
    for part in parent:
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
            info = tp.model_fields.get(part)
            if info is None:
                return set()
            tp = info.annotation
        elif get_origin(tp) in (dict, list):
            tp = get_args(tp)[-1]
        else:
            return set()
    tp = _unwrap(tp)
    if get_origin(tp) is not dict:
        return set()
    entry = _unwrap(get_args(tp)[1])
    if isinstance(entry, type) and issubclass(entry, BaseModel):
        return set(entry.model_fields)
    return set()


def _at(data: Any, path: Path) -> Any:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _entry_above(src: Source, parent: Path, key: str) -> str | None:
    """The entry of ``parent`` written just before ``key``, in the same file."""
    here = src.keys.get((*parent, key))
    best: tuple[int, int] | None = None
    found = None
    for name in _at(src.data, parent) or {}:
        pos = src.keys.get((*parent, name))
        if name == key or pos is None or here is None or pos.file != here.file:
            continue
        where = (pos.line, pos.col)
        if where < (here.line, here.col) and (best is None or where > best):
            best, found = where, name
    return found


def _moved(src: Source, path: Path, missing: set[Path]) -> tuple[Path, str] | None:
    """``(parent, entry above)`` if the last key of ``path`` looks like a field of that
    entry written one level too far left."""
    if len(path) < 2 or not isinstance(path[-1], str):
        return None
    parent, key = path[:-1], path[-1]
    entries = _at(src.data, parent)
    if not isinstance(entries, dict) or key not in entries:
        return None
    above = _entry_above(src, parent, key)
    if above is None or not isinstance(entries.get(above), dict) or not entries[above]:
        return None
    first = next(iter(entries[above]))
    kpos, fpos = src.keys.get((*parent, key)), src.keys.get((*parent, above, first))
    apos = src.keys.get((*parent, above))
    if kpos is None or fpos is None or apos is None or fpos.col <= kpos.col or \
            fpos.line <= apos.line:
        return None  # the entry above is a flow mapping, or not written above this key
    if (*parent, above, key) in missing or key in _entry_fields(parent):
        return parent, above
    return None


def said_once(src: Source, located: list[Located]) -> list[Problem]:
    """The problems, with those a key indented one level too little causes replaced by one."""
    missing = {loc for loc, p in located if p.code == "missing"}
    moved: dict[Path, tuple[Path, str]] = {}
    for loc, _ in located:
        for n in range(2, len(loc) + 1):
            if loc[:n] in moved:
                break
            found = _moved(src, loc[:n], missing)
            if found is not None:
                moved[loc[:n]] = found
                break
    if not moved:
        return [p for _, p in located]
    out = []
    for loc, p in located:
        if any(loc[:len(m)] == m for m in moved):
            continue
        if p.code == "missing" and any((*parent, above, m[-1]) == loc
                                       for m, (parent, above) in moved.items()):
            continue
        out.append(p)
    for key_path, (parent, above) in moved.items():
        key = str(key_path[-1])
        kpos = src.keys[key_path]
        first = next(iter(_at(src.data, (*parent, above))))
        fpos = src.keys[(*parent, above, first)]
        out.append(Problem(
            kpos, dotted(key_path),
            f"`{key}:` is indented {kpos.col - 1} spaces, as an entry of {dotted(parent)} "
            f"beside `{above}` (line {src.keys[(*parent, above)].line}), but it is a field of "
            f"`{above}`", code="indentation",
            hint=f"indent `{key}:` and the lines under it {fpos.col - kpos.col} more spaces, "
                 f"like `{first}:` on line {fpos.line}"))
    return out
