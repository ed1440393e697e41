"""Each new verb has --help with its exit codes, and the README's verb table names it."""

from __future__ import annotations

import pytest

from support.cli import ROOT, run_fleet


@pytest.mark.parametrize("verb", [["power"], ["console"], ["node", "list"], ["node", "show"],
                                  ["ports"]])
def test_help_names_the_exit_codes(verb: list[str]) -> None:
    r = run_fleet(*verb, "--help")
    assert r.returncode == 0 and "exit codes:" in r.stdout
    for flag in ("-i INVENTORY", "--json", "-q"):
        assert flag in r.stdout


@pytest.mark.parametrize("verb", ["power", "console", "node list", "ports"])
def test_the_readme_lists_the_verb(verb: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"| `{verb.split()[0]} " in readme
