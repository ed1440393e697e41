"""A verb imports only what it runs: `fleet --help` imports no verb's module, no verb's
implementation and no third-party library (the pydantic schema, yaml, jinja2); `fleet VERB
--help` imports that verb's module and no other verb's. What the process has imported is
read from sys.modules in a fresh interpreter (no timing: the figures are in
docs/benchmarks.md, benchmarks/bench_startup.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fleet.commands import VERBS, module_name
from support.cli import ROOT

PROBE = """
import contextlib, io, json, sys
from fleet.cli import main
try:
    with contextlib.redirect_stdout(io.StringIO()):
        main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""
# what `fleet --help` may import of fleet: the parser, its registry, the exit codes
HELP_ONLY = {"fleet", "fleet.cli", "fleet.cliparts", "fleet.commands", "fleet.context",
             "fleet.exitcodes", "fleet.output"}
THIRD_PARTY = ("pydantic", "yaml", "jinja2", "netaddr", "salt", "cryptography")


def imported(*argv: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True,
                         text=True, timeout=120, check=True, env=env).stdout
    return set(json.loads(out))


def test_fleet_help_imports_no_verb_and_no_library() -> None:
    mods = imported("--help")
    assert {m for m in mods if m.split(".")[0] == "fleet"} <= HELP_ONLY
    assert not [m for m in mods if m.split(".")[0] in THIRD_PARTY]


@pytest.mark.parametrize("verb", list(VERBS))
def test_a_verbs_help_imports_no_other_verb(verb: str) -> None:
    mods = imported(verb, "--help")
    own = module_name(verb)
    assert own in mods
    others = {m for m in mods if m.startswith("fleet.commands.")
              and not m.split(".")[2].startswith("_")} - {own}
    assert not others, f"fleet {verb} --help imports {sorted(others)}"
