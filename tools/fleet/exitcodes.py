"""The exit codes of every ``fleet`` command: one definition, listed in the README (a
test checks that table against this enum)."""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    INVALID = 1  # the inventory is invalid
    USAGE = 2  # bad arguments, unknown node, array or mode
    DIFFERS = 3  # rendered output, docs, keys or units differ from the inventory
    IO = 4  # could not read or write a file, or reach a service
    FAILED = 5  # a step failed on a node (reinstall, apply, health, rollout, mkv)
    BUSY = 6  # another run holds the node, or an unfinished run needs --resume/--abort
    INTERNAL = 70  # a bug in fleet


MEANING: dict[Exit, str] = {
    Exit.OK: "ok",
    Exit.INVALID: "invalid inventory",
    Exit.USAGE: "usage",
    Exit.DIFFERS: "output differs",
    Exit.IO: "I/O error",
    Exit.FAILED: "a step or node failed",
    Exit.BUSY: "busy or unfinished",
    Exit.INTERNAL: "internal error",
}


def summary() -> str:
    """``0 ok, 1 invalid inventory, ...``: the README's and ``--help``'s list."""
    return ", ".join(f"{int(code)} {MEANING[code]}" for code in Exit)
