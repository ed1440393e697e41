"""One node's entry under ``nodes:`` set in inventory.yaml's text, every other byte kept.

ruamel.yaml reads the file round-trip: where each entry starts, its style (a one-line flow
mapping, as the site writes them, or a block), its keys' order and their quoting. The
changed entry is written by ruamel in that same style (keys it does not change keep their
spelling and order; new ones are appended), and spliced in place of its old lines; a new
entry goes after the entry before it in name order, in its neighbour's style. The file is
never dumped whole: ruamel rewraps multi-line flow mappings (the site's switches and
group places), so only the entry's own lines change.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, ScalarString

QUOTED = ("mac", "bmc_mac", "ib_guid")  # written as the site writes them: "0c:42:..."


class EditError(ValueError):
    """The file has no ``nodes:`` mapping this edit can work in."""


def _yaml() -> YAML:
    y = YAML()
    y.preserve_quotes = True
    y.width = 4096  # never wrap the entry's line
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def _natural(name: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _end(lines: list[str], start: int, col: int) -> int:
    """The line after the entry that starts at ``start`` (its key at column ``col``):
    up to the first blank line or line indented no deeper than the key."""
    i = start + 1
    while i < len(lines):
        text = lines[i]
        if not text.strip() or len(text) - len(text.lstrip(" ")) <= col:
            break
        i += 1
    return i


def _value(key: str, value: Any, old: Any) -> Any:
    """``value`` as the file would write it: a nested mapping in flow style, a string in
    the quoting its old value had (MACs and GUIDs double-quoted when new)."""
    if isinstance(value, Mapping):
        m = CommentedMap(value)
        m.fa.set_flow_style()
        return m
    if isinstance(old, ScalarString) and isinstance(value, str):
        return type(old)(value)
    if isinstance(value, str) and (key in QUOTED or not _plain_safe(value)):
        return DoubleQuotedScalarString(value)
    return value


def _plain_safe(text: str) -> bool:
    """``text`` reads back as itself unquoted under YAML 1.1 too (the inventory's loader:
    ``yes``, ``0x10``, ``1e3`` or ``null`` would not)."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/-]*", text):
        return False
    return bool(yaml.safe_load(text) == text)


def _dump(y: YAML, host: str, entry: CommentedMap, col: int) -> list[str]:
    """The entry's lines at the depth it has in the file (dumped under a ``nodes:`` of
    its own, so that comments inside it keep their columns)."""
    buf = io.StringIO()
    inner = CommentedMap()
    inner[host] = entry
    top = CommentedMap()
    top["nodes"] = inner
    y.dump(top, buf)
    shift = col - 2
    lines = buf.getvalue().splitlines()[1:]
    return [(" " * shift + line if shift >= 0 else line[-shift:]) + "\n" for line in lines
            if line.strip()]


def set_node(text: str, host: str, facts: Mapping[str, Any]) -> str:
    """``text`` with ``nodes.<host>`` given ``facts`` (an entry made when there is none)."""
    y = _yaml()
    doc = y.load(text)
    nodes = doc.get("nodes") if isinstance(doc, CommentedMap) else None
    if not isinstance(nodes, CommentedMap) or not nodes:
        raise EditError("the inventory has no entries under 'nodes:' to add to")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    if host in nodes and isinstance(nodes[host], CommentedMap):
        entry = nodes[host]
        start, col = nodes.lc.key(host)
        end = _end(lines, start, col)
    else:
        before = [k for k in nodes if _natural(k) < _natural(host)]
        near = max(before, key=_natural) if before else next(iter(nodes))
        entry = CommentedMap()
        if nodes[near] is None or getattr(nodes[near], "fa", None) is None or \
                nodes[near].fa.flow_style():
            entry.fa.set_flow_style()
        line, col = nodes.lc.key(near)
        start = end = _end(lines, line, col) if before else line
    for key, value in facts.items():
        entry[key] = _value(key, value, entry.get(key))
    return "".join(lines[:start] + _dump(y, host, entry, col) + lines[end:])


def write_atomic(path: Path, text: str) -> None:
    """``text`` as the file at ``path``, renamed into place, keeping the file's mode."""
    mode = path.stat().st_mode & 0o777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        Path(tmp).chmod(mode)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def entry_of(text: str, host: str) -> dict[str, Any] | None:
    """``nodes.<host>`` as plain values, as ruamel reads the text back."""
    doc = _yaml().load(text)
    nodes = doc.get("nodes") if isinstance(doc, CommentedMap) else None
    value = nodes.get(host) if isinstance(nodes, CommentedMap) else None
    return _plain(value) if value is not None else None


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value) if isinstance(value, str) else value
