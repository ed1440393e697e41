"""The Salt roles use the shared macros of salt/lib/macros.jinja: a unit check written by
hand (``systemd-analyze verify`` in a role's own state) fails here, so every unit is
verified one way (docs/salt.md). Read as text: no Salt needed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SALT = ROOT / "salt"
HAND_WRITTEN = re.compile(r"systemd-analyze\s+verify")


def hand_written_unit_checks(text: str) -> list[int]:
    """Lines of ``text`` (an SLS file) that run ``systemd-analyze verify`` themselves."""
    return [n for n, line in enumerate(text.splitlines(), 1) if HAND_WRITTEN.search(line)]


def test_a_planted_hand_written_check_is_found() -> None:
    sls = ("{%- from 'lib/macros.jinja' import verify_unit %}\n"
           "{{ verify_unit('r-cmd-run-verify-unit', '/etc/systemd/system/r.service', []) }}\n"
           "r-cmd-run-verify-own:\n  cmd.run:\n"
           "    - name: systemd-analyze verify --man=no /etc/systemd/system/r.service\n")
    assert hand_written_unit_checks(sls) == [5]


def test_every_role_verifies_its_units_through_verify_unit() -> None:
    found = [f"{p.relative_to(ROOT)}:{n}" for p in sorted(SALT.rglob("*.sls"))
             for n in hand_written_unit_checks(p.read_text(encoding="utf-8"))]
    assert not found, ("a unit check written by hand: call verify_unit from "
                       "salt/lib/macros.jinja instead:\n  " + "\n  ".join(found))


HAND_UNPACKED = re.compile(r"\btar\s+-?x")


def test_every_pinned_tree_is_unpacked_through_pinned_tree() -> None:
    """A source tar unpacked by a role's own cmd.run (compute.miniray, nvidia.burnin's
    tools) goes through pinned_tree: one fetch-check-unpack-move, one way to get it wrong."""
    assert HAND_UNPACKED.search("tar -xf x.tar -C t.new")
    found = [f"{p.relative_to(ROOT)}:{n}" for p in sorted(SALT.rglob("*.sls"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if HAND_UNPACKED.search(line)]
    assert not found, ("a source tree unpacked by hand: call pinned_tree from "
                       "salt/lib/macros.jinja instead:\n  " + "\n  ".join(found))
