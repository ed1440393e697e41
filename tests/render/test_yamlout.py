"""The pillar emitter reads back what it was given."""

from __future__ import annotations

import pytest
import yaml

from fleet.render import yamlout


@pytest.mark.parametrize("value", ["a\n", "head-01\n", "10.1.0.1\n", "/etc/x\n", "a\n\n"])
def test_a_trailing_newline_is_kept(value: str) -> None:
    assert yaml.safe_load(yamlout.dump({"k": value})) == {"k": value}


@pytest.mark.parametrize("char", ["\x7f", "\x85", "\x9f", "\u2028", "\u2029", "\ufeff"])
@pytest.mark.parametrize("length", [1, 300])  # a short text (cached) and a long one (not)
def test_characters_readers_mangle_are_escaped(char: str, length: int) -> None:
    value = "x" * length + char + "y"
    text = yamlout.dump({"k": value, "l": [value]})
    assert char not in text
    assert f"\\u{ord(char):04x}" in text
    assert yaml.safe_load(text) == {"k": value, "l": [value]}


@pytest.mark.parametrize("value", ["a: b", "x" * 300 + ": y # z", "é ü 'q' \"d\" \\"])
def test_quoted_texts_long_or_short_read_back(value: str) -> None:
    assert yaml.safe_load(yamlout.dump({"k": [value], "m": {"n": value}})) == {
        "k": [value], "m": {"n": value}}
