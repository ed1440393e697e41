"""Which packages the site repository holds: every package a node's states hold or pin,
and every package locked to one of them, at the version apt resolves for the node.

A dependency is locked to its dependant when it moves with it: built from the same source
(slurmd and libslurm40), of the very same version (the kernel's meta package and the
kernel image it names), or required at an exact version (``=``). Everything else (libc6,
the firmware) stays the archive's, so the repository never holds back a security update of
a library the pinned packages merely use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

from fleet.apt.facts import Pin

Record = Mapping[str, str]


@dataclass(frozen=True)
class Dep:
    name: str
    exact: bool  # "(= version)"


def alternatives(record: Record) -> list[list[Dep]]:
    """Pre-Depends and Depends as groups of alternatives."""
    groups = []
    for key in ("Pre-Depends", "Depends"):
        for group in filter(None, (g.strip() for g in record.get(key, "").split(","))):
            alts = []
            for alt in group.split("|"):
                alt = alt.strip()
                name = re.split(r"[\s(:]", alt, maxsplit=1)[0]
                alts.append(Dep(name, bool(re.search(r"\(\s*=", alt))))
            groups.append(alts)
    return groups


def source_of(record: Record) -> str:
    """The source package's name (``Source: linux-signed (6.8.0-90.91)`` or the package)."""
    return (record.get("Source") or record.get("Package", "")).split()[0]


def provides(record: Record) -> list[str]:
    return [re.split(r"[\s(]", p.strip(), maxsplit=1)[0]
            for p in record.get("Provides", "").split(",") if p.strip()]


def roots(holds: Iterable[str], pins: Iterable[Pin], resolved: Mapping[str, str]) -> list[str]:
    """The held packages and every resolved package a pin matches, name and version (Salt's
    pin matches only where Salt's own repository was resolved too: ``fleet repo fill``)."""
    out = [h for h in holds if h in resolved]
    for pin in pins:
        out += [p for p in resolved if pin.matches(p) and fnmatchcase(resolved[p], pin.version)]
    return list(dict.fromkeys(out))


def locked(dependant: Record, dep: Record, exact: bool) -> bool:
    return (exact or source_of(dep) == source_of(dependant)
            or dep.get("Version") == dependant.get("Version"))


def closure(start: Iterable[str], records: Mapping[str, Record]) -> list[str]:
    """``start`` and every package locked to one of them, transitively; ``records`` are
    the resolved packages' records (name -> the record of the version apt installs)."""
    provider = {name: name for name in records}
    for name, record in records.items():
        for virtual in provides(record):
            provider.setdefault(virtual, name)
    out: list[str] = []
    todo = [n for n in start if n in records]
    while todo:
        name = todo.pop(0)
        if name in out:
            continue
        out.append(name)
        for group in alternatives(records[name]):
            for alt in group:
                real = provider.get(alt.name)
                if real is None:
                    continue
                if real not in out and locked(records[name], records[real], alt.exact):
                    todo.append(real)
                break  # apt took the first alternative it could satisfy
    return out
