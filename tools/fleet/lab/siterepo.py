"""The lab's site package repository (docs/repo.md): filled on the host for the lab nodes'
highstates, from the archive (check-packages' scratch apt, the archive's own URIs: the
lab has no apt cache before head-01 is up), signed by the lab secrets store's key; a
hardware-only package the archive lists but does not serve becomes a named stand-in
(lab/standins.yaml), one log line each. The image builds install from it and head-01
serves it at the inventory's ``site.apt.repo``, as on the site."""

from __future__ import annotations

import logging
from pathlib import Path

import yaml

from fleet.apt.archive import OSES, ArchiveError, ScratchApt, keyring
from fleet.apt.facts import NodeFacts
from fleet.lab.paths import Paths
from fleet.lab.plan import Plan
from fleet.lab.run import LabError
from fleet.repo import fill, reprepro, standin
from fleet.repo.fill import FillError

log = logging.getLogger("fleet.lab")


def codename(paths: Paths) -> str:
    return OSES[paths.os].codename


def enabled(plan: Plan) -> bool:
    return plan.inventory.raw.site.apt.repo is not None


def units(paths: Paths) -> dict[str, list[str]]:
    data = yaml.safe_load(paths.standins.read_text()) or {}
    return {str(k): [str(u) for u in v] for k, v in (data.get("units") or {}).items()}


def ensure(paths: Paths, plan: Plan, nodes: dict[str, NodeFacts]) -> fill.Report | None:
    """Fill the lab's repository for ``nodes`` (hostname -> its highstate's apt facts)."""
    if not enabled(plan) or not nodes:
        return None
    release = OSES[paths.os]
    cache = paths.repo / ".cache" / "packages"
    try:
        apt = ScratchApt(paths.lab / "repo-apt", release, keyring(release.distro, cache))
        apt.write_sources(next(iter(nodes.values())).sources)
        apt.update()
        target = fill.Target(paths.site_repo, paths.secrets, release.codename, units(paths))
        report = fill.fill(apt, list(nodes.items()), target, paths.lab / "repo-incoming")
    except (ArchiveError, FillError) as exc:
        raise LabError(f"the lab's site package repository: {exc}") from None
    log.info("%s", report.summary())
    for name, why in stand_ins(paths).items():
        log.warning("stand-in in the lab's site repository: %s (%s)", name, why)
    return report


def stand_ins(paths: Paths) -> dict[str, str]:
    """name -> why, for every stand-in the lab's repository holds."""
    return reprepro.stand_ins(paths.site_repo, codename(paths), standin.MARKER)


def packages_digest(paths: Paths) -> str:
    """What the repository holds (its index), for the image tags built from it."""
    index = reprepro.packages_index(paths.site_repo, codename(paths))
    return index.read_text() if index.is_file() else ""


def mount_args(paths: Paths, plan: Plan) -> list[str]:
    """The repository at the inventory's site.apt.repo, read-only."""
    repo = plan.inventory.raw.site.apt.repo
    if repo is None or not Path(paths.site_repo).is_dir():
        return []
    return ["-v", f"{paths.site_repo}:{repo}:ro"]
