"""``fleet repo fill`` and the lab's repository: resolve what the nodes' states hold and
pin, fetch what the repository lacks (each file checked against the signed index), stand
in for a hardware-only package the archive does not serve where that is allowed (the lab
only), then include it all at once: a failed fill leaves the repository as it was."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from fleet.apt.archive import ScratchApt
from fleet.apt.facts import NodeFacts, records, simulated, unmet
from fleet.repo import fetch, reprepro, signing, standin, wanted

log = logging.getLogger("fleet.repo")
PARALLEL = 4


class FillError(Exception):
    """The repository cannot be filled; it is left as it was."""


@dataclass(frozen=True)
class Entry:
    name: str
    version: str
    origin: str  # "held" (already in the repository), "archive", "stand-in"
    note: str = ""  # a stand-in's reason
    stand_in: bool = False


@dataclass
class Report:
    codename: str
    entries: list[Entry] = field(default_factory=list)

    @property
    def stand_ins(self) -> list[Entry]:
        return [e for e in self.entries if e.stand_in]

    def summary(self) -> str:
        added = sum(e.origin != "held" for e in self.entries)
        return (f"site repository {self.codename}: {len(self.entries)} packages, {added} "
                f"added, {len(self.stand_ins)} of them stand-ins")


@dataclass(frozen=True)
class Target:
    """Where and how to fill: the published tree, the secrets store holding the key, the
    OS codename, and (lab only) the stand-in units per package glob."""

    repo: Path
    secrets: Path
    codename: str
    standin_units: Mapping[str, list[str]] | None = None  # None: no stand-ins (the site)


def resolve(apt: ScratchApt, nodes: Iterable[tuple[str, NodeFacts]]
            ) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """name -> version and name -> record of every package the repository must hold for
    ``nodes`` (their sources already written into ``apt`` and updated)."""
    versions: dict[str, str] = {}
    recs: dict[str, dict[str, str]] = {}
    for node, facts in nodes:
        prefs = apt.preferences(node, facts.pins)
        sim = apt.simulate(facts.installs, [], prefs)
        if sim.returncode != 0:
            lines = unmet(sim.stdout + sim.stderr) or [sim.stderr.strip()[-400:]]
            raise FillError(f"{node}: its packages do not install from the archive: "
                            + "; ".join(lines[:8]))
        resolved = simulated(sim.stdout)
        names, shown = locked_set(apt, facts, resolved, prefs)
        for name in names:
            if versions.setdefault(name, resolved[name]) != resolved[name]:
                raise FillError(f"{name}: {node} resolves {resolved[name]}, another node "
                                f"{versions[name]}: one repository holds one version")
            recs[name] = shown[name]
    return versions, recs


def locked_set(apt: ScratchApt, facts: NodeFacts, resolved: dict[str, str], prefs: Path
               ) -> tuple[list[str], dict[str, dict[str, str]]]:
    """What the repository holds of one node whose install apt resolved to ``resolved``
    (fleet.repo.wanted), and the index records of every resolved package."""
    shown = records(apt.run("apt-cache", "show", "--no-all-versions",
                            *[f"{n}={v}" for n, v in resolved.items()],
                            preferences=prefs).stdout)
    return wanted.closure(wanted.roots(facts.holds, facts.pins, resolved), shown), shown


def fill(apt: ScratchApt, nodes: Iterable[tuple[str, NodeFacts]], target: Target,
         cache: Path) -> Report:
    """Fill ``target`` for ``nodes``; ``cache`` keeps downloaded files between runs."""
    versions, recs = resolve(apt, nodes)
    gnupghome = signing.home(target.secrets)
    fpr = signing.fingerprint(target.secrets)
    if fpr is None:
        raise FillError(f"{gnupghome}: no signing key: run `fleet secrets init`")
    report = Report(target.codename)
    target.repo.mkdir(parents=True, exist_ok=True)
    reprepro.init(target.repo, gnupghome, target.codename, fpr)
    have = reprepro.listed(target.repo, gnupghome, target.codename)
    todo = {n: v for n, v in versions.items() if have.get(n) != v}
    marked = reprepro.stand_ins(target.repo, target.codename, standin.MARKER)
    report.entries += [Entry(n, v, "held", marked.get(n, ""), n in marked)
                       for n, v in versions.items() if n not in todo]
    cache.mkdir(parents=True, exist_ok=True)
    files = _fetch(apt, todo, recs, cache)
    debs: list[Path] = []
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, got in files.items():
            if isinstance(got, Path):
                debs.append(got)
                report.entries.append(Entry(name, todo[name], "archive"))
                continue
            why = f"{got.wanted.url} answered {got.answer}"
            if target.standin_units is None or not standin.hardware_only(recs[name]):
                kind = ("hardware-only, but stand-ins are the lab's only"
                        if standin.hardware_only(recs[name]) else "not hardware-only")
                problems.append(f"{name} {todo[name]}: {why} ({kind})")
                continue
            units = standin.units_for(name, target.standin_units)
            debs.append(standin.build(recs[name], f"the archive listed it; {why}", units,
                                      Path(tmp)))
            report.entries.append(Entry(name, todo[name], "stand-in", why, True))
        if problems:
            raise FillError("the archive does not serve what the site pins (the repository "
                            "is unchanged): " + "; ".join(problems))
        reprepro.include(target.repo, gnupghome, target.codename, debs)
    for deb in debs:  # in the pool now
        if deb.parent == cache:
            deb.unlink()
    reprepro.export_key(target.repo, signing.public_key(target.secrets))
    return report


def _fetch(apt: ScratchApt, todo: dict[str, str], recs: Mapping[str, Mapping[str, str]],
           cache: Path) -> dict[str, Path | fetch.Missing]:
    if not todo:
        return {}
    prefs = apt.root / "prefs" / "none"
    prefs.mkdir(parents=True, exist_ok=True)
    try:
        want = fetch.uris(apt, todo, recs, prefs)
    except fetch.FetchError as exc:
        raise FillError(str(exc)) from None
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        try:
            got = list(pool.map(lambda w: fetch.download(w, cache), want))
        except fetch.FetchError as exc:
            raise FillError(str(exc)) from None
    return {w.name: g for w, g in zip(want, got, strict=True)}
