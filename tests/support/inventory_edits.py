"""Single edits to an inventory text and the problem ``fleet validate`` must report for
each: the code, the dotted path, the exact line:column (computed from the edited text,
never hard-coded) and words of the message."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from fleet.inventory.load import parse
from fleet.problems import InventoryError, Problem

FILE = "inventory.yaml"

Where = tuple[int, int]


def line_col(text: str, offset: int) -> Where:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def find(text: str, needle: str, *, line_with: str | None = None, nth: int | None = None) -> Where:
    """Position of ``needle``: the only occurrence, the ``nth`` one, or the first one in the
    only line that contains ``line_with``."""
    if line_with is not None:
        lines = [i for i, s in enumerate(text.splitlines(keepends=True)) if line_with in s]
        assert len(lines) == 1, f"{line_with!r} is on {len(lines)} lines"
        start = sum(len(s) for s in text.splitlines(keepends=True)[: lines[0]])
        offset = text.index(needle, start)
        assert offset < start + len(text.splitlines(keepends=True)[lines[0]])
        return line_col(text, offset)
    if nth is None:
        assert text.count(needle) == 1, f"{needle!r} occurs {text.count(needle)} times"
        nth = 0
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    return line_col(text, offset)


def edit(text: str, old: str, new: str, mark: str | None = None) -> tuple[str, Where]:
    """Replace the single occurrence of ``old`` with ``new``; return the new text and the
    position of ``mark`` (a substring of ``new``; default: its start) in it."""
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
    start = text.index(old)
    out = text[:start] + new + text[start + len(old):]
    assert out != text
    offset = start + (new.index(mark) if mark is not None else 0)
    return out, line_col(out, offset)


def problems_of(text: str) -> list[Problem]:
    with pytest.raises(InventoryError) as info:
        parse(text, FILE)
    problems = info.value.problems
    assert problems
    return problems


def expect(text: str, code: str, path: str, where: Where, *contains: str) -> Problem:
    """Assert that parsing ``text`` reports a problem with exactly this code, path and
    position, whose message contains every string in ``contains``."""
    problems = problems_of(text)
    listing = "\n".join(f"  [{p.code}] {p}" for p in problems)
    same = [p for p in problems if p.code == code and p.path == path]
    assert same, f"no [{code}] problem at {path!r}; got:\n{listing}"
    here = [p for p in same if (p.pos.line, p.pos.col) == where]
    assert here, f"[{code}] {path} reported at the wrong place, expected {where}; got:\n{listing}"
    p = here[0]
    assert p.pos.file == FILE
    for s in contains:
        assert s in p.message, f"{s!r} not in message of {p}"
    return p


def ref(where: Where) -> str:
    """How a message cites another position: ``(inventory.yaml:L:C)``."""
    return f"({FILE}:{where[0]}:{where[1]})"


def set_in_node(text: str, node: str, fields: str) -> tuple[str, str]:
    """Insert ``fields`` (flow-map text) right after ``<node>: {serial: X,``."""
    key = f"  {node}: {{serial: "
    start = text.index(key)
    comma = text.index(",", start)
    old = text[start:comma + 1]
    return old, f"{old} {fields},"



@dataclass(frozen=True)
class Edit:
    """One bad edit of the small inventory: ``old`` (occurring once) becomes ``new``, or,
    with ``node``, ``fields`` (flow-map text) is added to that node's entry; the problem
    ``code`` at ``path`` is reported at ``mark`` (a part of the new text; default: its
    start) and its message says each of ``says``, and, with ``cites``, the position of
    that text in the edited inventory (the ``cites_nth`` occurrence, or the one on the
    only line containing ``cites_line``) as ``(inventory.yaml:L:C)``."""

    name: str
    code: str
    path: str
    old: str = ""
    new: str = ""
    node: str | None = None
    fields: str = ""
    mark: str | None = None
    says: tuple[str, ...] = ()
    cites: str | None = None
    cites_nth: int | None = None
    cites_line: str | None = None

    def __post_init__(self) -> None:
        if (self.node is None) == (not self.old):
            raise ValueError(f"{self.name}: either old and new, or node and fields")

    def check(self, text: str) -> Problem:
        old, new = (self.old, self.new) if self.node is None else \
            set_in_node(text, self.node, self.fields)
        edited, at = edit(text, old, new, mark=self.mark)
        says = self.says if self.cites is None else (*self.says, ref(find(
            edited, self.cites, nth=self.cites_nth, line_with=self.cites_line)))
        return expect(edited, self.code, self.path, at, *says)
