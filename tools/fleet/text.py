"""Text from outside made safe to show: what a node, a BMC, Slurm, Salt or a file on disk
says passes through :func:`clean` before it reaches a terminal, a JSON report, a journal
or a Slurm drain reason. One policy, for every verb and the ground floor below them."""

from __future__ import annotations


def clean(text: object, limit: int = 200) -> str:
    """Printable ASCII on one line, at most ``limit`` characters (no control characters,
    no escape sequences, no bidi overrides, no newlines; runs of space become one; a cut
    ends in ``...``)."""
    s = "".join(c if " " <= c <= "~" else " " for c in str(text))
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: max(limit - 3, 0)] + "..."


def last_line(text: str, limit: int = 300) -> str:
    """The last non-blank line of a tool's output (where tools put the error), cleaned."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return clean(lines[-1], limit) if lines else ""
