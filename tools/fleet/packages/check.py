"""The checks of one node's apt facts against one OS release's archive."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from fleet.apt.archive import ScratchApt
from fleet.apt.facts import NodeFacts, records, simulated, transitional, unmet
from fleet.repo import fetch
from fleet.repo.fill import locked_set


@dataclass
class Result:
    os: str
    node: str
    roles: tuple[str, ...]
    facts: NodeFacts
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    resolved: int = 0  # packages the simulated install installs
    repo: int = 0  # packages of the site repository, each fillable

    @property
    def ok(self) -> bool:
        return not self.problems


def check_node(apt: ScratchApt, result: Result) -> None:
    facts = result.facts
    where = f"{result.os} {result.node}"
    result.notes += apt.write_sources(facts.sources)
    if not any(n.startswith("fleet.sources:") and "not checked" not in n for n in result.notes):
        result.problems.append(f"{where}: the states write no archive list (fleet.sources): "
                               "nothing to check against")
        return
    prefs = apt.preferences(result.node, facts.pins)
    found = _check_names(apt, result, prefs)
    sim = apt.simulate(facts.installs, [r for r in facts.removes if r in found], prefs)
    if sim.returncode != 0:
        lines = unmet(sim.stdout + sim.stderr) or [sim.stderr.strip()[-500:]]
        result.problems.append(f"{where}: the whole set does not install: "
                               + "; ".join(lines[:12]))
        return
    versions = simulated(sim.stdout)
    result.resolved = len(versions)
    _check_pins(result, versions)
    _check_fillable(apt, result, versions, prefs)


def _check_fillable(apt: ScratchApt, result: Result, versions: dict[str, str],
                    prefs: Path) -> None:
    """What the site package repository holds for this node (its held and pinned packages
    and what is locked to them, fleet.repo.wanted) is fillable: the archive's signed index
    names each one's file and sha256 (whether the archive still serves it is `fleet repo
    fill`'s to find: the lab's stand-ins, docs/repo.md)."""
    names, shown = locked_set(apt, result.facts, versions, prefs)
    try:
        fetch.uris(apt, {n: versions[n] for n in names}, shown, prefs)
    except fetch.FetchError as exc:
        result.problems.append(f"{result.os} {result.node}: the site repository cannot be "
                               f"filled: {exc}")
        return
    result.repo = len(names)


def _check_names(apt: ScratchApt, result: Result, prefs: Path) -> dict[str, dict[str, str]]:
    """Every package the states name exists in the archive, and none installed or held is
    a transitional one; the archive's records of them."""
    facts, where = result.facts, f"{result.os} {result.node}"
    named = list(dict.fromkeys(facts.installs + facts.holds + facts.removes))
    found = records(apt.show(named, prefs))
    for name in named:
        record = found.get(name)
        kind = ("held" if name in facts.holds else "installed" if name in facts.installs
                else "removed")
        if record is None:
            result.problems.append(f"{where}: {name} ({kind}): no such package in "
                                   f"{result.os}'s archive (or only a virtual one)")
            continue
        if kind == "removed":
            continue
        why = transitional(record)
        if why:
            result.problems.append(f"{where}: {name} {record.get('Version', '')} ({kind}) is "
                                   f"a transitional package: {why}")
    return found


def _check_pins(result: Result, versions: dict[str, str]) -> None:
    """Each pin matches a package the simulated install installs, at a version it has."""
    where = f"{result.os} {result.node}"
    for pin in result.facts.pins:
        pinned = sorted(p for p in versions if pin.matches(p))
        if not pinned:
            if any(name_is_salt(g) for g in pin.packages):
                result.notes.append(f"{pin.file}: {' '.join(pin.packages)} not checked "
                                    "(Salt's packages come from Salt's repository)")
            else:
                result.problems.append(f"{where}: pin {pin.version} of {pin.file} "
                                       f"({' '.join(pin.packages)}) matches no package the "
                                       "node installs")
            continue
        missed = [p for p in pinned if not fnmatchcase(versions[p], pin.version)]
        if missed:
            got = sorted({versions[p] for p in missed})
            shown = ", ".join(missed[:4]) + (f" and {len(missed) - 4} more" if len(missed) > 4
                                             else "")
            result.problems.append(
                f"{where}: pin {pin.version} ({pin.file}) matches no version of {shown} in "
                f"{result.os}'s archive: apt ignores it and installs {', '.join(got)}")


def name_is_salt(glob: str) -> bool:
    return glob.startswith("salt")
