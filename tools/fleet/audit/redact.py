"""What a record may not hold: every value of the secrets stores in reach (the one named by
``--secrets``, ``./secrets`` and the one beside the inventory), and the value of any option
whose name says it is a password or a token. Values are replaced wherever they appear, in
any string of the record, the arguments included, and so is any piece of a value
:data:`TOKEN_MIN` characters or longer (half a key pasted into a command line)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HIDDEN = "<secret>"
WHOLE_MIN = 4  # a whole file (a BMC password) this long or longer is a value
TOKEN_MIN = 12  # a word inside a file (a key in an .sls, a line of a key) this long
MAX_FILE = 1 << 20  # a store's secrets are small; a larger file is no secret value
SENSITIVE = re.compile(r"^--?[\w-]*(password|passwd|passphrase|token|credential)[\w-]*$", re.I)
_WORDS = re.compile(r"[\s:'\"=,]+")


def stores(args: Any) -> list[Path]:
    """The secrets stores a run could have read: --secrets, ./secrets, the inventory's."""
    found = [getattr(args, "secrets", None), Path("secrets")]
    inventory = getattr(args, "inventory", None)
    if isinstance(inventory, Path):
        found.append(inventory.parent / "secrets")
    return [p for p in dict.fromkeys(found) if isinstance(p, Path) and p.is_dir()]


def _files(root: Path) -> Iterable[Path]:
    for dirpath, _dirs, names in os.walk(root):  # does not follow links
        for name in names:
            path = Path(dirpath, name)
            if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_FILE:
                yield path


def values(roots: Iterable[Path]) -> set[str]:
    """Every secret value under ``roots``: each file whole, each line, and each word long
    enough to be a key (the words of ``munge_key: ...`` and ``AdminAuth: fleet:...``)."""
    out: set[str] = set()
    for root in roots:
        for path in _files(root):
            try:
                text = path.read_bytes().decode("utf-8", errors="replace")
            except OSError:
                continue
            whole = text.strip()
            if len(whole) >= WHOLE_MIN:
                out.add(whole)
            for line in text.splitlines():
                line = line.strip()
                if len(line) >= TOKEN_MIN:
                    out.add(line)
                out.update(w for w in _WORDS.split(line) if len(w) >= TOKEN_MIN)
    return out


def argv(words: list[str]) -> list[str]:
    """The arguments with the value of each password or token option hidden."""
    out: list[str] = []
    hide_next = False
    for word in words:
        if hide_next:
            out.append(HIDDEN)
            hide_next = False
            continue
        name, eq, _value = word.partition("=")
        if SENSITIVE.match(name):
            out.append(f"{name}={HIDDEN}" if eq else word)
            hide_next = not eq
            continue
        out.append(word)
    return out


def _pieces(text: str, haystack: str) -> str:
    """``text`` with each longest run of :data:`TOKEN_MIN` or more characters that occurs
    in ``haystack`` (the store's values) hidden."""
    out, i = [], 0
    while i < len(text):
        lo, hi = 0, len(text) - i  # the longest s[i:i+n] in the haystack, n in [lo, hi]
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if text[i:i + mid] in haystack:
                lo = mid
            else:
                hi = mid - 1
        if lo >= TOKEN_MIN:
            out.append(HIDDEN)
            i += lo
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def scrub(value: Any, secrets: set[str]) -> Any:
    """``value`` (a record, any nesting) with every secret replaced, longest first, then
    every piece of one."""
    ordered = sorted(secrets, key=len, reverse=True)
    haystack = "\0".join(ordered)

    def one(v: Any) -> Any:
        if isinstance(v, str):
            for s in ordered:
                if s in v:
                    v = v.replace(s, HIDDEN)
            return _pieces(v, haystack) if len(v) >= TOKEN_MIN and haystack else v
        if isinstance(v, dict):
            return {one(k): one(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [one(x) for x in v]
        return v

    return one(value)
