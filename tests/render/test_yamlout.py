"""The pillar emitter reads back what it was given."""

from __future__ import annotations

import pytest
import yaml

from fleet.render import yamlout


@pytest.mark.parametrize("value", ["a\n", "head-01\n", "10.1.0.1\n", "/etc/x\n", "a\n\n"])
def test_a_trailing_newline_is_kept(value: str) -> None:
    assert yaml.safe_load(yamlout.dump({"k": value})) == {"k": value}
