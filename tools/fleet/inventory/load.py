"""Read ``inventory.yaml``: YAML -> schema -> expansion -> cross-object rules.

Every stage collects problems; :func:`load_inventory` raises one
:class:`~fleet.problems.InventoryError` holding all of them, or returns a valid
:class:`~fleet.inventory.model.Inventory`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fleet.inventory import checks, schema
from fleet.inventory.expand import expand
from fleet.inventory.model import Inventory
from fleet.problems import InventoryError, Problem, dotted
from fleet.yamlsrc import Source, YamlLoadError, load

_HINTS = {
    "extra_forbidden": "remove it, or check its spelling",
    "missing": None,
}


_PATTERNS = {
    schema.NAME_PATTERN: "names are lower-case letters, digits and '-', starting with a letter",
    schema.HOST_PATTERN: "expected a hostname or a range such as tbox-[001-038]",
}


def _schema_problems(exc: ValidationError, src: Source) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        raw_loc = err["loc"]
        is_key = bool(raw_loc) and raw_loc[-1] == "[key]"
        loc = tuple(_plain_loc(raw_loc[:-1] if is_key else raw_loc, src))
        kind = err["type"]
        msg = err["msg"]
        pattern = (err.get("ctx") or {}).get("pattern")
        if pattern in _PATTERNS:
            msg = _PATTERNS[pattern]
        if is_key:
            pos = src.pos(loc, key=True)
            msg = f"{loc[-1]!r}: {msg}" if loc else msg
        elif kind == "extra_forbidden":
            pos = src.pos(loc, key=True)
            msg = f"unknown field {loc[-1]!r}" if loc else msg
        elif kind == "missing":
            pos = src.pos(loc[:-1]) if loc else src.pos(())
            msg = f"required field {loc[-1]!r} is missing" if loc else msg
        else:
            pos = src.pos(loc)
            value = err.get("input")
            if _is_scalar(value):
                shown = repr(src.texts[loc]) if isinstance(value, bool) and loc in src.texts \
                    else repr(value)
                msg = f"{shown}: {msg[0].lower()}{msg[1:]}" if msg else shown
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        problems.append(Problem(pos, dotted(loc), msg, code=kind, hint=_HINTS.get(kind)))
    return problems


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


def _plain_loc(loc: tuple[Any, ...], src: Source) -> list[str | int]:
    """Drop pydantic-only segments (union member names, tags) absent from the YAML."""
    out: list[str | int] = []
    for part in loc:
        candidate = (*out, part)
        if candidate in src.values or candidate in src.keys or part not in _PYDANTIC_TAGS:
            out.append(part)
    return out


_PYDANTIC_TAGS = {"str", "int", "float", "bool", "IPv4Address", "IPv4Network", "list", "dict"}


def parse(text: str, file: str) -> Inventory:
    """Validate inventory ``text`` (named ``file`` in messages)."""
    try:
        src = load(text, file)
    except YamlLoadError as exc:
        raise InventoryError(exc.problems) from None
    if not isinstance(src.data, dict):
        raise InventoryError([Problem(src.pos(()), "", "the inventory must be a YAML mapping "
                                      "with site, networks, profiles, node_groups and nodes",
                                      code="type")])
    try:
        raw = schema.Inventory.model_validate(src.data)
    except ValidationError as exc:
        raise InventoryError(_schema_problems(exc, src)) from None
    nodes, problems = expand(raw, src)
    problems += checks.run_all(checks.Ctx(raw=raw, nodes=nodes, src=src))
    if problems:
        raise InventoryError(problems)
    return Inventory(file=file, raw=raw, nodes=nodes)


def load_inventory(path: str | os.PathLike[str]) -> Inventory:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InventoryError([Problem(_nowhere(str(p)), "", f"cannot read: {exc.strerror}",
                                      code="io")]) from None
    except UnicodeDecodeError as exc:
        raise InventoryError([Problem(_nowhere(str(p)), "", f"not UTF-8 text: {exc.reason}",
                                      code="io")]) from None
    return parse(text, os.fspath(path))


def _nowhere(file: str) -> Any:
    from fleet.yamlsrc import Pos

    return Pos(file, 1, 1)
