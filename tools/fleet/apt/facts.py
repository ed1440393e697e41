"""The apt facts of a rendered highstate, and the parsers for apt's own formats."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

PREFERENCES_DIR = "/etc/apt/preferences.d/"
SOURCES_DIR = "/etc/apt/sources.list.d/"


@dataclass(frozen=True)
class Pin:
    file: str  # where the state writes it
    packages: tuple[str, ...]  # globs of the Package: line
    version: str  # the glob of `Pin: version ...`
    priority: int

    def matches(self, package: str) -> bool:
        return any(fnmatchcase(package, glob) for glob in self.packages)

    def text(self) -> str:
        return (f"Package: {' '.join(self.packages)}\nPin: version {self.version}\n"
                f"Pin-Priority: {self.priority}\n")


@dataclass
class NodeFacts:
    """What the states of one node do with apt."""

    installs: list[str] = field(default_factory=list)
    holds: list[str] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    pins: list[Pin] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # file -> deb822 text
    enabled_sources: dict[str, bool] = field(default_factory=dict)


def _names(chunk: dict[str, Any]) -> list[str]:
    pkgs = chunk.get("pkgs")
    if pkgs:
        out: list[str] = []
        for p in pkgs:
            out.extend(p) if isinstance(p, dict) else out.append(str(p))
        return out
    return [str(chunk["name"])]


def from_lowstate(lowstate: list[dict[str, Any]], files: dict[str, str]) -> NodeFacts:
    """``lowstate`` and rendered templates (state id -> text) of one node's highstate."""
    facts = NodeFacts()
    for chunk in lowstate:
        state, fun = chunk["state"], chunk["fun"]
        if state == "pkg" and fun in ("installed", "latest"):
            names = _names(chunk)
            facts.installs += [n for n in names if n not in facts.installs]
            if chunk.get("hold"):
                facts.holds += [n for n in names if n not in facts.holds]
        elif state == "pkg" and fun in ("removed", "purged"):
            facts.removes += [n for n in _names(chunk) if n not in facts.removes]
        elif state == "file" and fun == "managed":
            name = str(chunk["name"])
            text = files.get(chunk["__id__"], chunk.get("contents"))
            if not isinstance(text, str):
                continue
            if name.startswith(PREFERENCES_DIR):
                facts.pins += parse_preferences(text, name)
            elif name.startswith(SOURCES_DIR) and name.endswith(".sources"):
                facts.sources[name] = text
    return facts


def deb822(text: str) -> list[dict[str, str]]:
    """Stanzas of a deb822 file (comments dropped, continuation lines joined)."""
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    key = ""
    for raw in text.splitlines():
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if current:
                stanzas.append(current)
            current, key = {}, ""
            continue
        if raw[0] in " \t" and key:
            current[key] += "\n" + raw.strip()
            continue
        key, _, value = raw.partition(":")
        current[key.strip()] = value.strip()
    if current:
        stanzas.append(current)
    return stanzas


def parse_preferences(text: str, file: str) -> list[Pin]:
    pins = []
    for stanza in deb822(text):
        pin = stanza.get("Pin", "")
        if not pin.startswith("version "):
            continue
        pins.append(Pin(file, tuple(stanza.get("Package", "").split()),
                        pin[len("version "):].strip(), int(stanza.get("Pin-Priority", "500"))))
    return pins


def records(text: str) -> dict[str, dict[str, str]]:
    """apt-cache show output -> package -> its (first) record."""
    out: dict[str, dict[str, str]] = {}
    for stanza in deb822(text):
        name = stanza.get("Package")
        if name and name not in out:
            out[name] = stanza
    return out


def depends(record: dict[str, str]) -> list[str]:
    """The first alternative of each Depends/Pre-Depends, without versions."""
    names = []
    for key in ("Pre-Depends", "Depends"):
        for dep in filter(None, (d.strip() for d in record.get(key, "").split(","))):
            names.append(re.split(r"[\s(:|]", dep, maxsplit=1)[0])
    return names


def renamed(name: str, other: str) -> bool:
    """``other`` is ``name`` with one number changed (nvidia-utils-570-server ->
    nvidia-utils-580-server): the successor a transitional package pulls."""
    a, b = name.split("-"), other.split("-")
    if len(a) != len(b):
        return False
    diff = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    return len(diff) == 1 and diff[0][0].isdigit() and diff[0][1].isdigit()


TRANSITIONAL = re.compile(r"\btransitional\b|\bdummy\b", re.IGNORECASE)


def transitional(record: dict[str, str]) -> str | None:
    """Why the package is a transitional one, or None."""
    name = record.get("Package", "")
    successors = [d for d in depends(record) if renamed(name, d)]
    description = record.get("Description", "").split("\n")[0]
    if TRANSITIONAL.search(description):
        pulls = f"; it pulls {', '.join(depends(record))}" if depends(record) else ""
        return f"its description says {description!r}{pulls}"
    if successors:
        return (f"it is {record.get('Installed-Size', '?')} kB and pulls "
                f"{', '.join(successors)}, its own name with another number")
    return None


INST = re.compile(r"^Inst (\S+) (?:\[\S+\] )?\((\S+) ")


def simulated(text: str) -> dict[str, str]:
    """apt-get -s install output -> package -> version it would install."""
    out = {}
    for line in text.splitlines():
        m = INST.match(line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def unmet(text: str) -> list[str]:
    """The lines of apt-get's explanation of why an install is impossible."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if "unmet dependencies" in line:
            out += [x.strip() for x in lines[i + 1:] if x.strip() and not x.startswith("E:")]
        elif line.startswith("E:"):
            out.append(line)
    return out
