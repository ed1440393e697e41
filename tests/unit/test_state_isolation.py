"""The test run's own state roots (tests/conftest.py, support.statedirs): every root a
fleet verb keeps records in is found, and none of them is the machine's."""

from __future__ import annotations

import importlib

from fleet.master.statedir import StateDir
from support.statedirs import env_vars

DEFINING = ("fleet.master.statedir", "fleet.backup.paths", "fleet.audit.log")


def test_every_state_root_is_found_and_is_a_temporary_one() -> None:
    roots = [v for m in DEFINING for v in vars(importlib.import_module(m)).values()
             if isinstance(v, StateDir)]
    assert {r.env: r.default for r in roots} == env_vars()
    for r in roots:
        assert r.path() != r.default and not str(r.path()).startswith(
            ("/var/lib/", "/var/log/")), (r.env, r.path())
