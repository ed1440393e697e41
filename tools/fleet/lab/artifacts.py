"""The compute layer's pinned artifacts for the lab: its containers cannot reach the
package index, so the host fetches each wheel the lab inventory names under
``/srv/fleet/artifacts/`` (pip download, by the name and version in the file name) into
``.lab/artifacts``, which the lab's compute nodes mount there read-only. The Salt states
check each against the inventory's sha256, as on a real site."""

from __future__ import annotations

import logging
import re

from fleet.inventory.model import Inventory
from fleet.lab.paths import Paths
from fleet.lab.run import run

log = logging.getLogger(__name__)

IN_NODE = "/srv/fleet/artifacts/"
# a wheel's file name: name-version-(build-)?python-abi-platform.whl
WHEEL = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[A-Za-z0-9_.+!]+)-.+\.whl$")


def wanted(inv: Inventory) -> list[str]:
    """The wheel file names of the compute section's artifacts under /srv/fleet/artifacts/."""
    comp = inv.raw.compute
    if comp is None:
        return []
    sources = [comp.valkey.artifact.source, comp.uv.source]
    sources += [a.source for a in (comp.miniray, comp.triton.artifact) if a is not None]
    return [s[len(IN_NODE):] for s in sources if s.startswith(IN_NODE)]


def fetch(paths: Paths, inv: Inventory) -> None:
    """Download the missing ones into .lab/artifacts (kept between bring-ups)."""
    d = paths.lab / "artifacts"
    d.mkdir(parents=True, exist_ok=True)
    for name in wanted(inv):
        if (d / name).is_file():
            continue
        m = WHEEL.match(name)
        if m is None:
            raise ValueError(f"{IN_NODE}{name}: not a wheel file name; put the file into "
                             f"{d} by hand")
        log.info("fetching %s for the lab's compute nodes", name)
        run([str(paths.venv_bin / "pip"), "download", "--quiet", "--disable-pip-version-check",
             "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
             "--platform", name.rsplit("-", 1)[1].removesuffix(".whl").split(".")[0],
             "-d", str(d), f"{m['name']}=={m['version']}"], timeout=900)
        if not (d / name).is_file():
            raise FileNotFoundError(f"pip did not download {name} into {d}")
