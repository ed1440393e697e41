"""Which Slurm each supported OS release ships, and Slurm's rules for mixing versions.

The Salt states pin ``slurm.version`` with an apt preference (``Pin: version X.*``) and
hold it. The archive of each OS release has one Slurm major release; a pin that matches
none of its versions is ignored by apt, which then installs and holds that release's own
Slurm. So a node runs ``slurm.version`` only where its OS ships it, and its OS's Slurm
otherwise. :func:`check_slurm_versions` rejects both the pin that matches nothing and a
cluster whose daemons would run versions that Slurm does not support together: slurmd
newer than slurmctld, or more than two major releases apart (Slurm's upgrade guide:
the controller first, and daemons at most two releases older than it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from fleet.inventory.model import Node
from fleet.problems import Problem

if TYPE_CHECKING:
    from fleet.inventory.checks import Ctx

# slurm-wlm of each supported OS release (its archive, with -updates and -security)
SHIPPED: dict[str, str] = {
    "ubuntu-24.04": "23.11",
    "ubuntu-22.04": "21.08",
    "debian-12": "22.05",
}
# Slurm's major releases in order (YY.MM; two a year since 23.02)
MAJORS: tuple[str, ...] = ("20.02", "20.11", "21.08", "22.05", "23.02", "23.11", "24.05",
                           "24.11", "25.05", "25.11")
# Debian suites of site.images installers
DEBIAN_SUITES: dict[str, str] = {"bookworm": "debian-12"}
MAX_APART = 2
SLURM_ROLES = ("slurm.controller", "slurm.compute")


def major(version: str) -> str:
    """'23.11.4' -> '23.11'."""
    return ".".join(version.split(".")[:2])


def apart(a: str, b: str) -> int | None:
    """How many major releases lie between a and b (None: one of them is unknown)."""
    if major(a) not in MAJORS or major(b) not in MAJORS:
        return None
    return abs(MAJORS.index(major(a)) - MAJORS.index(major(b)))


def node_os(c: Ctx, node: Node) -> str | None:
    """The OS release a node is installed with: its group's Debian image, or the site's
    Ubuntu release. None: an image of a suite this module does not know."""
    if node.image is not None:
        image = c.raw.site.images.get(node.image)
        return DEBIAN_SUITES.get(image.suite) if image is not None else None
    return f"{c.raw.site.os.distro}-{c.raw.site.os.release}"


def runs(pin: str, os_name: str) -> str:
    """The Slurm a node of ``os_name`` ends up with under the pin."""
    shipped = SHIPPED[os_name]
    return pin if major(pin) == shipped else shipped


def check_slurm_versions(c: Ctx) -> Iterator[Problem]:
    """Reject daemons that Slurm does not run together: each node runs what its OS ships
    under the pin (:func:`runs`); slurmd never newer than slurmctld, and at most
    MAX_APART major releases behind it. That the pin is what an OS ships is checked where
    the archive is (`make check-packages`) and on the node (the states' version check)."""
    slurm = c.raw.slurm
    if slurm is None:
        return
    controller = c.nodes.get(slurm.controller)
    ctl_os = node_os(c, controller) if controller is not None else None
    if controller is None or ctl_os not in SHIPPED:
        return
    pin = slurm.version
    ctld = runs(pin, ctl_os)
    by_os: dict[str, list[Node]] = {}
    for node in c.nodes.values():
        os_name = node_os(c, node)
        if node.has("slurm.compute") and os_name in SHIPPED:
            by_os.setdefault(os_name, []).append(node)
    path = ("slurm", "version")
    for os_name, computes in sorted(by_os.items()):
        slurmd = runs(pin, os_name)
        names = _names(computes)
        where = f"slurm.version {pin}: slurmd {slurmd} ({os_name}: {names})"
        ctl = f"slurmctld {ctld} ({ctl_os}: {controller.hostname})"
        hint = f"the Slurm of each OS: {_shipped()}"
        distance = apart(ctld, slurmd)
        if distance is None:
            continue
        if MAJORS.index(major(slurmd)) > MAJORS.index(major(ctld)):
            yield c.problem(path, f"{where} would be newer than {ctl}: Slurm needs the "
                            "controller at the newest version", shown="slurm.version",
                            code="slurm_skew", hint=hint)
        elif distance > MAX_APART:
            yield c.problem(path, f"{where} would be {distance} major releases behind {ctl}:"
                            f" Slurm supports at most {MAX_APART}", shown="slurm.version",
                            code="slurm_skew", hint=hint)


def _shipped() -> str:
    return ", ".join(f"{o} {v}" for o, v in sorted(SHIPPED.items()))


def _names(nodes: list[Node], limit: int = 3) -> str:
    shown = ", ".join(n.hostname for n in nodes[:limit])
    more = len(nodes) - limit
    return shown + (f" and {more} more" if more > 0 else "")
