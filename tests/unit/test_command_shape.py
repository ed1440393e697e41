"""One command shape (fleet.commands): every verb of the registry is a module with
register(sub, parents) and run(args, ctx), and every verb (each action of one that has
actions) takes the options the README says every verb takes: --json, -q, -v, --debug,
and, all but lab, -i and --overlay."""

from __future__ import annotations

import argparse
import importlib

import pytest

from fleet.cli import build_parser
from fleet.commands import VERBS, module_name

EVERY = {"--json", "-q", "-v", "--debug", "-h"}
INVENTORY = {"-i", "--overlay"}
NO_INVENTORY = {"lab"}  # the lab's inventory is always the checkout's (docs/lab.md)


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _leaves() -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(verb, action or '', its parser) of every verb and every action of one."""
    out = []
    for verb, p in _subparsers(build_parser()).items():
        actions = _subparsers(p)
        out += [(verb, a, sp) for a, sp in actions.items()] if actions else [(verb, "", p)]
    return out


LEAVES = _leaves()


@pytest.mark.parametrize("verb", list(VERBS))
def test_every_verb_is_one_module_of_the_one_shape(verb: str) -> None:
    module = importlib.import_module(module_name(verb))
    assert callable(module.register) and callable(module.run)


def test_the_parser_has_every_verb_of_the_registry_in_its_order() -> None:
    assert list(_subparsers(build_parser())) == list(VERBS)


@pytest.mark.parametrize(("verb", "action", "parser"), LEAVES,
                         ids=[f"{v} {a}".strip() for v, a, _ in LEAVES])
def test_every_verb_takes_the_options_the_readme_says(verb: str, action: str,
                                                      parser: argparse.ArgumentParser) -> None:
    flags = {s for a in parser._actions for s in a.option_strings}
    assert flags >= EVERY
    if verb in NO_INVENTORY:
        assert not flags & INVENTORY
    else:
        assert flags >= INVENTORY
