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
from fleet.inventory.expand import expand, expand_hosts
from fleet.inventory.model import Inventory, Node
from fleet.inventory.overlay import ONLY_NODES
from fleet.inventory.overlay import apply as apply_overlay
from fleet.problems import InventoryError, Problem, dotted
from fleet.secrets import password_problems
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


def _yaml(text: str, file: str) -> Source:
    try:
        src = load(text, file)
    except YamlLoadError as exc:
        raise InventoryError(exc.problems) from None
    if not isinstance(src.data, dict):
        raise InventoryError([Problem(src.pos(()), "", "expected a YAML mapping (site, "
                                      "networks, profiles, node_groups, nodes, ...)",
                                      code="type")])
    return src


def _selection(only: Any, osrc: Source | None) -> tuple[list[str] | None, list[Problem]]:
    if only is None or osrc is None:
        return None, []
    if not isinstance(only, list) or not all(isinstance(h, str) for h in only):
        return None, [Problem(osrc.pos((ONLY_NODES,)), ONLY_NODES,
                              "expected a list of hostnames", code="type")]
    return only, []


def _trim(raw: schema.Inventory, keep: set[str]) -> schema.Inventory:
    """Drop node groups with no selected host, and the facts of machines in no kept group."""
    groups = {}
    hosts: set[str] = set()
    for name, group in raw.node_groups.items():
        try:
            members = {h for h, _ in expand_hosts(group.hosts)}
        except ValueError:
            members = set()
        if members & keep or not members:
            groups[name] = group
            hosts |= members
    nodes = {h: f for h, f in raw.nodes.items() if h in hosts or h in keep}
    return raw.model_copy(update={"node_groups": groups, "nodes": nodes})


def _apply_selection(raw: schema.Inventory, nodes: dict[str, Node], only: list[str],
                     osrc: Source) -> tuple[dict[str, Node], list[Problem]]:
    problems = []
    for i, host in enumerate(only):
        if host not in raw.nodes:
            problems.append(Problem(osrc.pos((ONLY_NODES, i)), f"{ONLY_NODES}[{i}]",
                                    f"unknown node {host!r}", code="unknown_ref"))
    needed = {raw.site.provisioning_host: "the provisioning host",
              raw.site.salt.master: "the Salt master"}
    if raw.slurm is not None:
        needed[raw.slurm.controller] = "the Slurm controller"
    if raw.mkv is not None:
        for name, array in raw.mkv.arrays.items():
            needed.setdefault(array.master, f"the master of mkv array {name}")
    for host, what in needed.items():
        if host not in only:
            problems.append(Problem(osrc.pos((ONLY_NODES,)), ONLY_NODES,
                                    f"{host} ({what}) must be selected", code="missing"))
    keep = set(only)
    return {h: n for h, n in nodes.items() if h in keep}, problems


def parse(text: str, file: str, overlay: tuple[str, str] | None = None, *,
          secrets: Path | None = None) -> Inventory:
    """Validate inventory ``text`` (named ``file`` in messages), with an optional overlay
    given as ``(text, file)``; with ``secrets``, also that store's BMC passwords."""
    src = _yaml(text, file)
    osrc: Source | None = None
    only: Any = None
    if overlay is not None:
        osrc = _yaml(*overlay)
        src, only = apply_overlay(src, osrc)
    selection, problems = _selection(only, osrc)
    if problems:
        raise InventoryError(problems)
    try:
        raw = schema.Inventory.model_validate(src.data)
    except ValidationError as exc:
        raise InventoryError(_schema_problems(exc, src)) from None
    if selection is not None:
        raw = _trim(raw, set(selection))
    nodes, problems = expand(raw, src)
    if selection is not None and osrc is not None:
        nodes, more = _apply_selection(raw, nodes, selection, osrc)
        problems += more
    problems += checks.run_all(checks.Ctx(raw=raw, nodes=nodes, src=src))
    if secrets is not None:
        problems += password_problems(raw, src, secrets)
    if problems:
        raise InventoryError(problems)
    return Inventory(file=file, raw=raw, nodes=nodes)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InventoryError([Problem(_nowhere(str(path)), "", f"cannot read: {exc.strerror}",
                                      code="io")]) from None
    except UnicodeDecodeError as exc:
        raise InventoryError([Problem(_nowhere(str(path)), "", f"not UTF-8 text: {exc.reason}",
                                      code="io")]) from None


def load_inventory(path: str | os.PathLike[str],
                   overlay: str | os.PathLike[str] | None = None, *,
                   secrets: Path | None = None) -> Inventory:
    text = _read(Path(path))
    extra = None
    if overlay is not None:
        extra = (_read(Path(overlay)), os.fspath(overlay))
    return parse(text, os.fspath(path), extra, secrets=secrets)


def _nowhere(file: str) -> Any:
    from fleet.yamlsrc import Pos

    return Pos(file, 1, 1)
