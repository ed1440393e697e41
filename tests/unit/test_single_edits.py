"""`fleet validate`'s rules, one row each (single_edits.yaml): a single edit of the small
inventory and the problem it must cause, at the edited value's exact line:column
(support.inventory_edits). A rule that needs more than one edit or one problem to show
has its own test in test_rules.py, test_limits.py or test_strict_types.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from support.inventory_edits import Edit

TABLE = Path(__file__).with_name("single_edits.yaml")
FIELDS = set(Edit.__dataclass_fields__)


def load_cases() -> list[Edit]:
    rows = yaml.safe_load(TABLE.read_text())
    assert isinstance(rows, list) and rows, f"{TABLE}: no rows"
    for i, row in enumerate(rows):
        assert isinstance(row, dict) and set(row) <= FIELDS, f"{TABLE}: row {i}: {row!r}"
    return [Edit(**{**row, "says": tuple(row.get("says", ()))}) for row in rows]


CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_single_edit_is_reported_at_its_value(small_text: str, case: Edit) -> None:
    case.check(small_text)


def test_every_case_has_its_own_name() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
