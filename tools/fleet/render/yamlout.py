"""A small, fast, deterministic YAML emitter for rendered data.

PyYAML's representer is pure Python and was most of the render time. Rendered data is
plain (dict, list, str, int, float, bool, None), so block-style output is simple to emit.
Strings stay plain only when no YAML 1.1 resolver could read them as anything else;
everything else is written as a JSON string, which is a valid double-quoted YAML scalar.
The tests check ``yaml.safe_load(dump(x)) == x`` on random data.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

# Starts with a letter, '_' or '/', then only characters that never start YAML syntax
# (inner spaces are fine: no ':' or '#' can follow them).
_PLAIN = re.compile(r"^[A-Za-z_/]([A-Za-z0-9_./@+ -]*[A-Za-z0-9_./@+-])?$")
# Dotted quads and CIDRs: never an int, float or timestamp in YAML 1.1.
_DOTTED = re.compile(r"^\d+\.\d+\.\d+\.\d+(/\d+)?$")
# Characters YAML readers mangle or reject even inside double quotes: escape them.
_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff]")
_RESERVED = frozenset({
    "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf",
})


@lru_cache(maxsize=65536)
def _str(value: str) -> str:
    if (_PLAIN.match(value) and value.lower().lstrip(".") not in _RESERVED
            and not value.startswith(("-", "."))) or _DOTTED.match(value):
        return value
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False))


def scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"cannot render {value!r}")
        return repr(value)
    if isinstance(value, str):
        return _str(value)
    raise TypeError(f"cannot render {type(value).__name__} as YAML")


def dump(data: Any, *, sort_keys: bool = True) -> str:
    out: list[str] = []
    _emit(data, 0, out, sort_keys)
    return "".join(out)


def _emit(data: Any, indent: int, out: list[str], sort_keys: bool) -> None:
    pad = " " * indent
    if isinstance(data, dict):
        if not data:
            out.append(pad + "{}\n")
            return
        items = sorted(data.items()) if sort_keys else data.items()
        for key, value in items:
            _item(pad + scalar(key) + ":", value, indent, out, sort_keys)
    elif isinstance(data, list | tuple):
        if not data:
            out.append(pad + "[]\n")
            return
        for value in data:
            if isinstance(value, dict) and value:
                # "- " followed by the first key on the same line, the rest indented.
                items = sorted(value.items()) if sort_keys else list(value.items())
                for i, (key, item) in enumerate(items):
                    lead = pad + ("- " if i == 0 else "  ") + scalar(key) + ":"
                    _item(lead, item, indent + 2, out, sort_keys)
            else:
                _item(pad + "-", value, indent, out, sort_keys, in_list=True)
    else:
        out.append(pad + scalar(data) + "\n")


def _item(lead: str, value: Any, indent: int, out: list[str], sort_keys: bool,
          in_list: bool = False) -> None:
    if isinstance(value, dict | list | tuple) and value:
        out.append(lead + "\n")
        # Lists under a mapping key stay at the key's indent (PyYAML's style).
        child = indent + 2 if isinstance(value, dict) or in_list else indent
        _emit(value, child, out, sort_keys)
    elif isinstance(value, dict):
        out.append(lead + " {}\n")
    elif isinstance(value, list | tuple):
        out.append(lead + " []\n")
    else:
        out.append(lead + " " + scalar(value) + "\n")
