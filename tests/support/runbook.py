"""The runbook's procedures as steps: a section of docs/operations.md ("### Add a node")
read in order, each ```yaml block an edit of the inventory (a merge patch: only the
fields shown change) and each ``$ `` line of a ```console block a command, with the
output lines the block shows under it. tests/lab/test_runbook.py runs them on the lab;
tests/unit/test_runbook_steps.py checks, without a lab, that every step is one it runs.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import yaml

from support.cli import ROOT

RUNBOOK = ROOT / "docs" / "operations.md"
# the procedures the lab follows (tests/lab/test_runbook.py)
SECTIONS = ("Add a node", "Retire a node")
# every program a step may run; anything else is a step the lab cannot follow
PROGRAMS = ("fleet", "salt-key", "scontrol", "sinfo", "git")
# the fleet verbs a step may run (the lab form of each: tests/lab/test_runbook.py)
FLEET_VERBS = ("validate", "diff", "render", "apply", "reinstall", "keys", "health",
               "status", "power")

FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass
class Step:
    line: int  # in docs/operations.md, 1-based
    edit: dict[str, Any] | None = None  # a yaml block
    argv: list[str] = field(default_factory=list)  # a `$` line, its comment dropped
    shown: list[str] = field(default_factory=list)  # output lines shown under it

    @property
    def text(self) -> str:
        return f"docs/operations.md:{self.line}: " + (
            "inventory edit" if self.edit is not None else shlex.join(self.argv))


def section(name: str, text: str | None = None) -> list[tuple[int, str]]:
    """The lines (number, text) of ``### name`` up to the next heading of its level or
    above."""
    lines = (RUNBOOK.read_text() if text is None else text).splitlines()
    try:
        start = lines.index(f"### {name}")
    except ValueError:
        raise LookupError(f"docs/operations.md has no section '### {name}'") from None
    out = []
    for i in range(start + 1, len(lines)):
        if re.match(r"^#{1,3} ", lines[i]):
            break
        out.append((i + 1, lines[i]))
    return out


def _blocks(lines: list[tuple[int, str]]) -> list[tuple[str, list[tuple[int, str]]]]:
    """The fenced blocks of ``lines``: (language, body lines)."""
    blocks: list[tuple[str, list[tuple[int, str]]]] = []
    current: list[tuple[int, str]] | None = None
    for num, line in lines:
        fence = FENCE.match(line)
        if fence and current is None:
            current = []
            blocks.append((fence.group(1), current))
        elif fence:
            current = None
        elif current is not None:
            current.append((num, line))
    return blocks


def steps(name: str, text: str | None = None) -> list[Step]:
    """The steps of section ``name``, in order."""
    out: list[Step] = []
    for lang, body in _blocks(section(name, text)):
        if lang == "yaml" and body:
            edit = yaml.safe_load("\n".join(line for _, line in body))
            if not isinstance(edit, dict):
                raise ValueError(f"docs/operations.md:{body[0][0]}: an edit is a mapping")
            out.append(Step(body[0][0], edit=edit))
        elif lang == "console":
            for num, line in body:
                if line.startswith("$ "):
                    out.append(Step(num, argv=shlex.split(line[2:], comments=True)))
                elif line.strip() and out and out[-1].argv:
                    out[-1].shown.append(line.strip())
    return out


def unrunnable(step: Step) -> str | None:
    """Why the lab cannot run ``step`` (None: it can)."""
    if step.edit is not None:
        return None
    if not step.argv or step.argv[0] not in PROGRAMS:
        return f"{step.text}: not one of the programs the lab runs ({', '.join(PROGRAMS)})"
    if step.argv[0] == "fleet" and (len(step.argv) < 2 or step.argv[1] not in FLEET_VERBS):
        return f"{step.text}: no lab form for this fleet verb ({', '.join(FLEET_VERBS)})"
    return None
