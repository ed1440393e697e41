"""Text for people: what a node, a BMC, Slurm, Salt or a file on disk says passes through
:func:`clean` before it reaches a terminal, a JSON report, a journal or a Slurm drain
reason (one policy, for every verb and the ground floor below them), through
:func:`shown` where it must be seen exactly as it came (escaped, not dropped), or through
:func:`masked` where it stays data (its control characters as ``?``); a time is shown as
UTC and its age (:func:`stamp`)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime


def clean(text: object, limit: int = 200) -> str:
    """Printable ASCII on one line, at most ``limit`` characters (no control characters,
    no escape sequences, no bidi overrides, no newlines; runs of space become one; a cut
    ends in ``...``)."""
    s = "".join(c if " " <= c <= "~" else " " for c in str(text))
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: max(limit - 3, 0)] + "..."


def _escaped(c: str) -> str:
    if c == "\\":
        return "\\\\"
    return c if " " <= c <= "~" else ascii(c)[1:-1]


def shown(text: str, limit: int = 200) -> str:
    """``text`` kept whole but made safe for a terminal: printable ASCII as is, everything
    else as a Python escape (``\\x1b``): what a node reported, shown exactly as it came
    (discovery reports, burn-in results), never raw."""
    return "".join(map(_escaped, text[:limit])) + ("..." if len(text) > limit else "")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def masked(text: str, limit: int = 1000) -> str:
    """``text`` with each control character (C0, DEL, C1) as ``?``, at most ``limit``
    characters: a value that stays data (an alert's label, matched to a hostname), made
    harmless for a terminal without changing anything else of it."""
    return _CONTROL.sub("?", text)[:limit]


def printable(text: str, limit: int = 120) -> str:
    """Only the printable ASCII of ``text`` (anything else dropped, not spaced), at most
    ``limit`` characters: for a short word a file or a tool holds (a lock's holder)."""
    return "".join(c for c in text if " " <= c <= "~")[:limit]


def last_line(text: str, limit: int = 300) -> str:
    """The last non-blank line of a tool's output (where tools put the error), cleaned."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return clean(lines[-1], limit) if lines else ""


def age(seconds: float) -> str:
    """``3m ago``: the largest whole unit (d, h, m, s) of a time that has passed."""
    s = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{int(s // size)}{unit} ago"
    return f"{int(s)}s ago"


def stamp(ts: float, now: float | None = None) -> str:
    """A Unix time as people read it: ``2026-12-05 02:11:40 UTC (3m ago)``."""
    when = datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{when} ({age((time.time() if now is None else now) - ts)})"
