"""Problems found in an inventory, and how they are printed.

Every check, from YAML syntax to cross-node rules, produces :class:`Problem` values;
they are collected and reported together, never raised one at a time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fleet.yamlsrc import Pos


def dotted(path: tuple[str | int, ...]) -> str:
    """``('nodes', 'tbox-017', 'mac')`` -> ``nodes.tbox-017.mac``; list items as ``[i]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


@dataclass(frozen=True)
class Problem:
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

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.pos.file, self.pos.line, self.pos.col, self.message)

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
