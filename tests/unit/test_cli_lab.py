"""`fleet lab ...` is a verb of `fleet` (docs/lab.md): the Makefile's lab targets run it."""

from __future__ import annotations

import pytest

from fleet.cli import build_parser, main


@pytest.mark.parametrize("action", ["up", "down", "status", "apply"])
def test_fleet_lab_actions_parse(action: str) -> None:
    args = build_parser().parse_args(["lab", action])
    assert args.verb == "lab"
    assert args.lab_verb == action


def test_fleet_lab_help_lists_the_actions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["lab", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for action in ("up", "down", "status", "apply"):
        assert action in out


def test_fleet_lab_unknown_action_is_a_usage_error() -> None:
    assert main(["lab", "frobnicate"]) == 2
