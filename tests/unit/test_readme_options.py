"""The README's verb table and ``--help`` checked against each other: every option the table
names for a verb is one that verb's parser (or one of its actions') shows, so a renamed
option (``fleet pxe``'s ``--state-dir`` is ``--pxe-state``) cannot live on in the README;
and so is every option of every ``fleet VERB ...`` the docs write.
The verbs' order is tests/unit/test_docs.py's; the options every verb takes,
tests/unit/test_command_shape.py's."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from fleet.cli import build_parser
from fleet.commands import VERBS

ROOT = Path(__file__).resolve().parents[2]
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z-]*")


def _cells(readme: str) -> list[str]:
    """The first column of the README's verb table, a row each."""
    table = readme.split("`fleet` (in `.venv/bin`) has these verbs", 1)[1].split("\n\n", 2)[1]
    return [re.split(r"(?<!\\)\|", row)[1] for row in table.splitlines()[2:]]


def named(cells: list[str]) -> dict[str, set[str]]:
    """verb -> the options its cells name: each backticked item starts with its verb, or
    goes on the one before it (``burnin finish NODE...\\|--all``)."""
    out: dict[str, set[str]] = {}
    for cell in cells:
        verb = None
        for item in re.findall(r"`([^`]+)`", cell):
            first = item.split()[0]
            verb = first if first in VERBS else verb
            if verb is not None:
                out.setdefault(verb, set()).update(OPTION.findall(item))
    return out


def options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string ``--help`` shows for ``parser`` and the subparsers below it (a
    hidden one, such as an old name still read, is not among them)."""
    out: set[str] = set()
    for action in parser._actions:
        if action.help != argparse.SUPPRESS:
            out.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out |= options(sub)
    return out


def verb_parser(verb: str) -> argparse.ArgumentParser:
    top = build_parser([verb])
    (verbs,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    parser: argparse.ArgumentParser = verbs.choices[verb]
    return parser


def _unknown(cells: list[str]) -> list[str]:
    return [f"fleet {verb} {opt}" for verb, opts in sorted(named(cells).items())
            for opt in sorted(opts - options(verb_parser(verb)))]


def test_a_planted_option_the_parser_lacks_is_found() -> None:
    cells = [" `pxe set NODE install\\|local [--state-dir DIR]`, `pxe status` ",
             " `burnin finish NODE...\\|--all` ", " `power on TARGET [--force]` "]
    assert named(cells) == {"pxe": {"--state-dir"}, "burnin": {"--all"}, "power": {"--force"}}
    # fleet pxe's --state-dir is --pxe-state now: the README must not name it, nor a made-up one
    assert _unknown(cells) == ["fleet pxe --state-dir"]
    assert _unknown([" `power on TARGET [--forse]` "]) == ["fleet power --forse"]


def test_every_option_the_readme_table_names_is_in_the_verbs_help() -> None:
    cells = _cells((ROOT / "README.md").read_text(encoding="utf-8"))
    found = named(cells)
    assert {"power", "reinstall", "rollout"} <= set(found) and "--force" in found["power"]
    unknown = _unknown(cells)
    assert not unknown, "the README's verb table names options the verbs do not take " \
        "(see `fleet VERB --help`):\n  " + "\n  ".join(unknown)


def test_a_hidden_option_is_not_in_help() -> None:
    """The README may name only what --help shows: fleet pxe's old --state-dir is gone."""
    pxe = verb_parser("pxe")
    (actions,) = [a for a in pxe._actions if isinstance(a, argparse._SubParsersAction)]
    helps = " ".join(sub.format_help() for sub in actions.choices.values())
    assert "--pxe-state" in helps and "--state-dir" not in helps


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def commands_in(text: str) -> list[str]:
    """Every ``fleet VERB ...`` a doc writes: inline in backticks, or a line of a code
    block (after a prompt or at its start, up to a comment or a pipe)."""
    found = re.findall(r"`fleet ([^`]+)`", text)
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        found += re.findall(r"(?:^|\$ |\s)fleet ([^\n#|;&]+)", block, flags=re.M)
    return [c for c in found if c.split() and c.split()[0] in VERBS]


def _unknown_in(text: str) -> list[str]:
    seen: dict[str, set[str]] = {}
    out = []
    for command in commands_in(text):
        verb = command.split()[0]
        if verb not in seen:
            seen[verb] = options(verb_parser(verb))
        out += [f"fleet {verb} {opt}" for opt in OPTION.findall(command)
                if opt not in seen[verb]]
    return out


def test_a_planted_doc_command_with_an_old_option_is_found() -> None:
    text = ("Set it with `fleet pxe set gpu-01 install --state-dir /srv`.\n\n```\n"
            "$ fleet power off gpu-01 --force   # --forse in a comment is not read\n"
            "fleet rollout 'gpu-*' --wave 2 --waves 3\n```\n")
    assert commands_in(text)[0] == "pxe set gpu-01 install --state-dir /srv"
    assert _unknown_in(text) == ["fleet pxe --state-dir", "fleet rollout --waves"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_option_a_doc_gives_a_verb_is_in_its_help(doc: Path) -> None:
    unknown = _unknown_in(doc.read_text(encoding="utf-8"))
    assert not unknown, f"{doc.name} writes options the verbs do not take (see `fleet VERB " \
        "--help`):\n  " + "\n  ".join(unknown)
