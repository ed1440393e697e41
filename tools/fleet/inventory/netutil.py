"""MAC address parsing shared by expansion and checks."""

from __future__ import annotations

import functools
import re

_MAC = re.compile(r"^[0-9a-f]{2}([:-])[0-9a-f]{2}(\1[0-9a-f]{2}){4}$")


def normalize_mac(value: object) -> str:
    """``0C-C4-7A-12-34-56`` -> ``0c:c4:7a:12:34:56``; ValueError if malformed."""
    if not isinstance(value, str):
        raise ValueError("not text")
    return _normalized(value)


# Bounded, of strings only: expansion and the checks ask for each node's MACs three times
@functools.lru_cache(maxsize=1 << 16)
def _normalized(value: str) -> str:
    text = value.strip().lower()
    if not _MAC.match(text):
        raise ValueError("malformed")
    return text.replace("-", ":")


def try_normalize_mac(value: str) -> str:
    try:
        return normalize_mac(value)
    except ValueError:
        return value


def hexhyp(mac: str) -> str:
    """iPXE's ``${mac:hexhyp}`` spelling: ``0c-c4-7a-12-34-56``."""
    return mac.replace(":", "-")
