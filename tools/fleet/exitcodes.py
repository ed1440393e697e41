"""The exit codes of every ``fleet`` command: one definition, listed in the README (a
test checks that table against this enum) and in ``--help``. Every verb returns one of
these, signals included: a run ended by SIGINT or SIGTERM exits 128 + the signal, as a
shell reports it, through :func:`for_signal`."""

from __future__ import annotations

import signal
from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    INVALID = 1  # the inventory is invalid
    USAGE = 2  # bad arguments, unknown node, array or mode
    DIFFERS = 3  # rendered output, docs, keys or units differ from the inventory
    IO = 4  # could not read or write a file (the inventory too), or reach the master
    FAILED = 5  # a step failed on a node, or a node is unhealthy
    BUSY = 6  # another run holds the node, or an unfinished run needs --resume/--abort
    INTERNAL = 70  # a bug in fleet
    INTERRUPTED = 130  # SIGINT (128 + 2): the operator stopped the run
    PIPE = 141  # SIGPIPE (128 + 13): the reader of stdout went away (`| head`)
    TERMINATED = 143  # SIGTERM (128 + 15): the run was stopped


MEANING: dict[Exit, str] = {
    Exit.OK: "ok",
    Exit.INVALID: "invalid inventory",
    Exit.USAGE: "usage",
    Exit.DIFFERS: "output differs",
    Exit.IO: "I/O error or master unreachable",
    Exit.FAILED: "a step or node failed",
    Exit.BUSY: "busy or unfinished",
    Exit.INTERNAL: "internal error",
    Exit.INTERRUPTED: "interrupted (SIGINT)",
    Exit.PIPE: "output pipe closed (SIGPIPE)",
    Exit.TERMINATED: "terminated (SIGTERM)",
}


def for_signal(signum: int) -> Exit:
    """The code of a run a signal ended (SIGINT or SIGTERM, the two fleet handles)."""
    return Exit.TERMINATED if signum == signal.SIGTERM else Exit.INTERRUPTED


def summary() -> str:
    """``0 ok, 1 invalid inventory, ...``: the README's and ``--help``'s list."""
    return ", ".join(f"{int(code)} {MEANING[code]}" for code in Exit)
