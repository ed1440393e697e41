"""The runbook's procedures as steps: a section of docs/operations.md ("### Add a node")
read in order, each ```yaml block an edit of the inventory (a merge patch: only the
fields shown change) and each ``$ `` line of a ```console block a command, with the
output lines the block shows under it. A command's ``sudo`` is kept apart (``Step.sudo``),
its comment too (``Step.note``: where a procedure of two hosts says which one runs it,
``# on head-02``), and each step knows the ``#### `` part of the section it is in
(``Step.part``). tests/lab/test_runbook.py, test_master_restore.py and test_standby.py
run them on the lab; tests/unit/test_runbook_steps.py checks, without a lab, that every
step is one they run.
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
# the master's own procedures: backup and restore (tests/lab/test_master_restore.py) and
# the failover (tests/lab/test_standby.py), with the programs and verbs they run
BACKUP_SECTIONS = ("Set up and run the backup", "Restore head-01 onto a fresh install")
FAILOVER_SECTION = "Fail over to the standby master"
MASTER_PROGRAMS = ("fleet", "salt", "systemctl", "install", "git")
MASTER_VERBS = ("render", "secrets", "backup", "restore", "status", "keys", "apply",
                "reinstall")

FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass
class Step:
    line: int  # in docs/operations.md, 1-based
    edit: dict[str, Any] | None = None  # a yaml block
    argv: list[str] = field(default_factory=list)  # a `$` line, its comment dropped
    shown: list[str] = field(default_factory=list)  # output lines shown under it
    sudo: bool = False  # the line runs argv with sudo
    note: str = ""  # the line's comment, its ``#`` dropped
    part: str = ""  # the ``#### `` heading the step is under ("" before any)

    @property
    def text(self) -> str:
        return f"docs/operations.md:{self.line}: " + (
            "inventory edit" if self.edit is not None
            else shlex.join(["sudo"] * self.sudo + self.argv))


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


def _blocks(lines: list[tuple[int, str]]
            ) -> list[tuple[str, str, list[tuple[int, str]]]]:
    """The fenced blocks of ``lines`` (fences indented as in a list item too): (the
    ``#### `` part they are in, language, body lines)."""
    blocks: list[tuple[str, str, list[tuple[int, str]]]] = []
    current: list[tuple[int, str]] | None = None
    part, indent = "", 0
    for num, line in lines:
        fence = FENCE.match(line.strip())
        if fence and current is None:
            current, indent = [], len(line) - len(line.lstrip())
            blocks.append((part, fence.group(1), current))
        elif fence:
            current = None
        elif current is not None:
            current.append((num, line[indent:] if not line[:indent].strip() else line))
        elif line.startswith("#### "):
            part = line[5:].strip()
    return blocks


def _command(num: int, line: str, part: str) -> Step:
    """A ``$`` line: its words, ``sudo`` kept apart, its comment kept as the note."""
    quote, cut = "", len(line)
    for i, ch in enumerate(line):  # the comment: a ``#`` that starts a word, unquoted
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            cut = i
            break
    argv = shlex.split(line[:cut])
    sudo = argv[:1] == ["sudo"]
    return Step(num, argv=argv[sudo:], sudo=sudo, note=line[cut + 1:].strip(), part=part)


def steps(name: str, text: str | None = None) -> list[Step]:
    """The steps of section ``name``, in order."""
    out: list[Step] = []
    for part, lang, body in _blocks(section(name, text)):
        if lang == "yaml" and body:
            edit = yaml.safe_load("\n".join(line for _, line in body))
            if not isinstance(edit, dict):
                raise ValueError(f"docs/operations.md:{body[0][0]}: an edit is a mapping")
            out.append(Step(body[0][0], edit=edit, part=part))
        elif lang == "console":
            for num, line in body:
                if line.startswith("$ "):
                    out.append(_command(num, line[2:], part))
                elif line.strip() and out and out[-1].argv:
                    out[-1].shown.append(line.strip())
    return out


def unrunnable(step: Step, programs: tuple[str, ...] = PROGRAMS,
               verbs: tuple[str, ...] = FLEET_VERBS) -> str | None:
    """Why the lab cannot run ``step`` (None: it can): a program or fleet verb it has no
    lab form for (``programs``, ``verbs``: those of the test that follows it)."""
    if step.edit is not None:
        return None
    if not step.argv or step.argv[0] not in programs:
        return f"{step.text}: not one of the programs the lab runs ({', '.join(programs)})"
    if step.argv[0] == "fleet" and (len(step.argv) < 2 or step.argv[1] not in verbs):
        return f"{step.text}: no lab form for this fleet verb ({', '.join(verbs)})"
    return None
