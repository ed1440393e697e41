"""A small, fast, deterministic YAML emitter for rendered data.

PyYAML's representer is pure Python and was most of the render time. Rendered data is
plain (dict, list, str, int, float, bool, None), so block-style output is simple to emit.
Strings stay plain only when no YAML 1.1 resolver could read them as anything else;
everything else is written as a JSON string, which is a valid double-quoted YAML scalar.
The tests check ``yaml.safe_load(dump(x)) == x`` on random data.
"""

from __future__ import annotations

import json.encoder
import re
from functools import lru_cache
from typing import Any

# Starts with a letter, '_' or '/', then only characters that never start YAML syntax
# (inner spaces are fine: no ':' or '#' can follow them).
_PLAIN = re.compile(r"[A-Za-z_/]([A-Za-z0-9_./@+ -]*[A-Za-z0-9_./@+-])?\Z")
# Dotted quads and CIDRs: never an int, float or timestamp in YAML 1.1.
_DOTTED = re.compile(r"\d+\.\d+\.\d+\.\d+(/\d+)?\Z")
# Characters YAML readers mangle or reject even inside double quotes: escape them.
_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff]")
_RESERVED = frozenset({
    "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf",
})


# what json.JSONEncoder(ensure_ascii=False).encode does with a str, without its checks
_quote = json.encoder.encode_basestring


def _text(value: str) -> str:
    if (_PLAIN.match(value) and value.lower().lstrip(".") not in _RESERVED
            and not value.startswith(("-", "."))) or _DOTTED.match(value):
        return value
    quoted = _quote(value)
    if quoted.isascii() and "\x7f" not in quoted:  # nothing _UNSAFE matches: no regex scan
        return quoted
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


# Short texts repeat (keys, names, addresses): cached. A long one is mostly one node's own
# (its late-commands), which a cache would only hold in memory until the render ends.
_str = lru_cache(maxsize=65536)(_text)
_LONG = 256


def _string(value: str) -> str:
    return _str(value) if len(value) <= _LONG else _text(value)


def scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"cannot render {value!r}")
        return repr(value)
    raise TypeError(f"cannot render {type(value).__name__} as YAML")


def dump(data: Any, *, sort_keys: bool = True, indent: str = "") -> str:
    """Block-style YAML of ``data``; every line starts with ``indent``."""
    out: list[str] = []
    _emit(data, indent, out, sort_keys)
    return "".join(out)


class Memo:
    """Reuses the text of sub-trees that repeat across nodes (hardware, site sections...).

    The key is the sub-tree's ``repr``, which keeps insertion order and tells 1, 1.0,
    True and "1" apart; building it in C is far cheaper than emitting YAML again."""

    def __init__(self) -> None:
        self._texts: dict[tuple[str, bool, str], str] = {}

    def dump(self, data: Any, *, sort_keys: bool = True, indent: str = "") -> str:
        key = (indent, sort_keys, repr(data))
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = dump(data, sort_keys=sort_keys, indent=indent)
        return text

    def dump_mapping(self, name: str, data: dict[str, Any], repeated: frozenset[str], *,
                     sort_keys: bool = True) -> str:
        """``name:`` then each entry of ``data``; entries named in ``repeated`` (the same on
        many nodes) go through the memo, the others are emitted directly."""
        out = [f"{_str(name)}:\n"]
        texts = self._texts
        for k, v in (sorted(data.items()) if sort_keys else data.items()):
            if k in repeated:
                key = ("  ", sort_keys, repr(k) + repr(v))
                text = texts.get(key)
                if text is None:
                    text = texts[key] = dump({k: v}, sort_keys=sort_keys, indent="  ")
                out.append(text)
            else:
                _mapping(((k, v),), "  ", "  ", "    ", out, sort_keys)
        return "".join(out)


# The emitter below is the hot path of a render: the common cases (str, int, bool, None,
# dict, list values) are handled inline; anything else goes through scalar().


def _emit(data: Any, pad: str, out: list[str], sort_keys: bool) -> None:
    """Emit a collection (or a lone scalar) whose lines start at ``pad``."""
    append = out.append
    if isinstance(data, dict):
        if not data:
            append(pad + "{}\n")
            return
        _mapping(data.items(), pad, pad, pad + "  ", out, sort_keys)
    elif isinstance(data, list | tuple):
        if not data:
            append(pad + "[]\n")
            return
        inner = pad + "  "
        first_pad = pad + "- "
        for value in data:
            if type(value) is str:
                append(f"{first_pad}{_string(value)}\n")
            elif isinstance(value, dict) and value:
                # "- " then the first key on the same line, the rest aligned under it.
                _mapping(value.items(), first_pad, inner, inner + "  ", out, sort_keys)
            else:
                _value(pad + "-", value, pad, out, sort_keys, True)
    else:
        append(pad + scalar(data) + "\n")


def _mapping(items: Any, first: str, pad: str, inner: str, out: list[str],
             sort_keys: bool) -> None:
    """The entries of a non-empty mapping: the first line starts with ``first``, the others
    with ``pad``; nested collections go at ``inner`` (mappings) or ``pad`` (lists)."""
    append = out.append
    lead_pad = first
    for key, value in (sorted(items) if sort_keys else items):
        lead = lead_pad + (_str(key) if type(key) is str else scalar(key)) + ":"
        lead_pad = pad
        kind = type(value)
        if kind is str:
            append(f"{lead} {_string(value)}\n")
        elif kind is int:
            append(f"{lead} {value}\n")
        elif value is None:
            append(lead + " null\n")
        elif kind is bool:
            append(lead + (" true\n" if value else " false\n"))
        elif kind is dict:
            if value:
                append(lead + "\n")
                _mapping(value.items(), inner, inner, inner + "  ", out, sort_keys)
            else:
                append(lead + " {}\n")
        elif kind is list:
            if value:
                append(lead + "\n")
                # Lists under a mapping key stay at the key's indent (PyYAML's style).
                _emit(value, pad, out, sort_keys)
            else:
                append(lead + " []\n")
        else:
            _value(lead, value, pad, out, sort_keys, False)


def _value(lead: str, value: Any, pad: str, out: list[str], sort_keys: bool,
           in_list: bool) -> None:
    if type(value) is str:
        out.append(f"{lead} {_string(value)}\n")
    elif isinstance(value, dict):
        if value:
            out.append(lead + "\n")
            _emit(value, pad + "  ", out, sort_keys)
        else:
            out.append(lead + " {}\n")
    elif isinstance(value, list | tuple):
        if value:
            out.append(lead + "\n")
            # Lists under a mapping key stay at the key's indent (PyYAML's style).
            _emit(value, pad + "  " if in_list else pad, out, sort_keys)
        else:
            out.append(lead + " []\n")
    else:
        out.append(f"{lead} {scalar(value)}\n")
