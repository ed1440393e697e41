"""Places in a tree of Python files that share a run of lines of the same shape.

The architecture test's duplicate rule (tests/unit/test_architecture_shape.py) stands on
this, so that the rule needs nothing CI does not have. A line's *shape* is its tokens with
every identifier, string and number replaced by a placeholder (keywords and punctuation
stay, and so do the builtins); blank lines, comments, docstrings, import statements and
lines of data alone (strings, numbers and punctuation: a closing bracket, a row of a
table) are passed over. Every window of ``size`` consecutive kept lines is hashed; two windows
with the same hash in different places (two files, or one file's two non-overlapping
stretches) are a pair, and the windows of one pair that follow each other are one run. A
window is paired however many places hold it: a shape copied into nine places is more
duplication than one copied into two, not an idiom to pass over.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import io
import keyword
import token
import tokenize
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

SIZE = 6  # lines: the rule's threshold
DISTINCT = 4  # shapes a window needs to count: fewer is a table (fields, choices, rows)


@dataclass(frozen=True)
class Line:
    number: int  # 1-based, in the file
    shape: str


@dataclass(frozen=True)
class Run:
    """Lines ``a_lines`` of ``a`` have the shape of lines ``b_lines`` of ``b`` (paths
    relative to the tree, ``a`` <= ``b``)."""

    a: str
    a_lines: tuple[int, int]
    b: str
    b_lines: tuple[int, int]

    def __str__(self) -> str:
        return (f"{self.a}:{self.a_lines[0]}-{self.a_lines[1]} ~ "
                f"{self.b}:{self.b_lines[0]}-{self.b_lines[1]}")


def _skipped_lines(tree: ast.AST) -> set[int]:
    """The lines of import statements and docstrings (a string standing alone as a
    statement: a module's, class's or function's docstring, or an attribute's)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        alone = (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                 and isinstance(node.value.value, str))
        if alone or isinstance(node, ast.Import | ast.ImportFrom):
            assert isinstance(node, ast.stmt)
            skip.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return skip


# names of the language itself (keywords, builtins) stay: they are the shape, not its names
_LANGUAGE = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins))
_DATA = frozenset("()[]{},:;") | {"S", "0", "-", "+"}


def _placeholder(tok: tokenize.TokenInfo) -> str | None:
    if tok.type == token.NAME:
        return tok.string if tok.string in _LANGUAGE else "N"
    if tok.type == token.STRING:
        return "S"
    if tok.type == token.NUMBER:
        return "0"
    if tok.type == token.OP:
        return tok.string
    return None  # comments, newlines, indents: not part of a shape


def shapes(source: str) -> list[Line]:
    """The kept lines of ``source`` with their shapes, in order."""
    skip = _skipped_lines(ast.parse(source))
    by_line: dict[int, list[str]] = defaultdict(list)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        text = _placeholder(tok)
        if text is not None and tok.start[0] not in skip:
            by_line[tok.start[0]].append(text)
    lines = []
    for number in sorted(by_line):
        parts = by_line[number]
        if all(p in _DATA for p in parts):  # a bracket alone, or a row of a table of values
            continue
        lines.append(Line(number, " ".join(parts)))
    return lines


def _windows(lines: list[Line], size: int) -> list[str | None]:
    """Each window's hash; None for a thin one (a table: fewer than DISTINCT shapes)."""
    found: list[str | None] = []
    for i in range(len(lines) - size + 1):
        window = [ln.shape for ln in lines[i:i + size]]
        thin = len(set(window)) < DISTINCT
        found.append(None if thin else hashlib.sha1("\n".join(window).encode()).hexdigest())
    return found


def runs(files: dict[str, str], size: int = SIZE) -> list[Run]:
    """Every run of ``size`` or more same-shape lines that two places of ``files`` (a path,
    its source) share."""
    kept = {path: shapes(src) for path, src in files.items()}
    where: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for path in sorted(kept):
        for i, h in enumerate(_windows(kept[path], size)):
            if h is not None:
                where[h].append((path, i))
    matches: set[tuple[str, int, str, int]] = set()
    for places in where.values():
        for x, (pa, ia) in enumerate(places):
            for pb, ib in places[x + 1:]:
                if pa == pb and ib - ia < size:
                    continue  # one stretch overlapping itself
                matches.add((pa, ia, pb, ib))
    found = []
    for pa, ia, pb, ib in sorted(matches):
        if (pa, ia - 1, pb, ib - 1) in matches:
            continue  # not the start of its run
        n = 0
        while (pa, ia + n + 1, pb, ib + n + 1) in matches:
            n += 1
        la, lb = kept[pa], kept[pb]
        found.append(Run(pa, (la[ia].number, la[ia + n + size - 1].number),
                         pb, (lb[ib].number, lb[ib + n + size - 1].number)))
    return found


def tree_runs(root: Path, size: int = SIZE) -> list[Run]:
    """``runs`` over every ``*.py`` below ``root``, paths relative to it."""
    files = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
             for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts}
    return runs(files, size)
