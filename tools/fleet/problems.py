"""Problems found in an inventory, and how they are printed.

Every check, from YAML syntax to cross-node rules, produces :class:`Problem` values;
they are collected and reported together, never raised one at a time.
"""

from __future__ import annotations

import json
from typing import NamedTuple, Protocol, TypedDict, Unpack

MAX_SHOWN = 60


class Pos(NamedTuple):
    """A 1-based position in a source file (a tuple: cheap to make by the hundred thousand)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class Located(Protocol):
    """Where each part of a document came from (fleet.yamlsrc.Source)."""

    def pos(self, path: tuple[str | int, ...], *, key: bool = False) -> Pos: ...


def short(value: object, limit: int = MAX_SHOWN) -> str:
    """``repr(value)``, shortened for a message: a huge offending value (a 1 MB string, a
    hostile line) is shown by its start and its length, never whole."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f"{len(value)} characters" if isinstance(value, str) else f"{len(text)} characters"
    return f"{text[:limit]}... ({size})"


def dotted(path: tuple[str | int, ...]) -> str:
    """``('nodes', 'tbox-017', 'mac')`` -> ``nodes.tbox-017.mac``; list items as ``[i]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = str(part)
            if len(text) > MAX_SHOWN:  # a hostile key is shown by its start only
                text = text[:MAX_SHOWN] + "..."
            out += ("." if out else "") + text
    return out


class Problem(NamedTuple):
    pos: Pos
    path: str
    message: str
    code: str = "invalid"
    hint: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        text = f"{self.pos}: {where}{self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return text

    def sort_key(self) -> tuple[str, int, int, str, str, str, str]:
        """Every field: equal positions and messages (one value reported for several
        paths) must not fall back on set order, which varies from run to run."""
        return (self.pos.file, self.pos.line, self.pos.col, self.message, self.path,
                self.code, self.hint or "")

    def as_dict(self) -> dict[str, object]:
        return {
            "file": self.pos.file,
            "line": self.pos.line,
            "column": self.pos.col,
            "path": self.path,
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
        }


class ProblemOptions(TypedDict, total=False):
    """The optional parts of :meth:`Reporter.problem`."""

    shown: str | None  # the path as printed, when it is not the dotted ``path``
    code: str
    hint: str | None
    key: bool  # at the key of ``path``, not at its value


class Reporter:
    """Builds the :class:`Problem` at a data path of one source: the shared part of the
    inventory's rule contexts (``checks.Ctx``, ``expand``'s context)."""

    src: Located

    def problem(self, path: tuple[str | int, ...], message: str,
                **opts: Unpack[ProblemOptions]) -> Problem:
        shown = opts.get("shown")
        return Problem(self.src.pos(path, key=opts.get("key", False)),
                       shown if shown is not None else dotted(path), message,
                       code=opts.get("code", "invalid"), hint=opts.get("hint"))


class InventoryError(Exception):
    """The inventory is invalid; carries every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        unique = sorted(set(problems), key=Problem.sort_key)
        super().__init__(f"{len(unique)} problem(s) in the inventory")
        self.problems = unique


def format_text(problems: list[Problem], *, wrote_nothing: bool = False) -> str:
    lines = [str(p) for p in problems]
    n = len(problems)
    lines.append(f"{n} error{'s' if n != 1 else ''}" + ("; nothing was written" if wrote_nothing
                                                        else ""))
    return "\n".join(lines)


def format_json(problems: list[Problem]) -> str:
    return json.dumps({"ok": False, "errors": [p.as_dict() for p in problems]}, indent=2)
