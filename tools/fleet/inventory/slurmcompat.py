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
    from fleet.inventory.checks.ctx import Ctx

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


def pin_for(version: str | dict[str, str], os_name: str) -> str | None:
    """The pin of nodes of ``os_name``: the one version, or the OS's entry (None: none)."""
    return version if isinstance(version, str) else version.get(os_name)


def check_slurm_versions(c: Ctx) -> Iterator[Problem]:
    """Each node runs what its OS ships under its pin (:func:`runs`). Rejected: an entry of
    the per-OS form that its OS does not ship (or no entry for an OS that nodes run);
    slurmd newer than slurmctld, or more than MAX_APART major releases behind it. Whether
    a single version is what the nodes' OS ships is checked on the node (the states'
    version check) and against the archive (`make check-packages`)."""
    slurm = c.raw.slurm
    if slurm is None:
        return
    path: tuple[str, ...] = ("slurm", "version")
    version: str | dict[str, str] = (slurm.version if isinstance(slurm.version, str)
                                     else {str(k): v for k, v in slurm.version.items()})
    by_os: dict[str, list[Node]] = {}
    for node in c.nodes.values():
        os_name = node_os(c, node)
        if os_name in SHIPPED and any(node.has(r) for r in SLURM_ROLES):
            by_os.setdefault(os_name, []).append(node)
    if isinstance(version, dict):
        yield from _per_os(c, path, version, by_os)
    controller = c.nodes.get(slurm.controller)
    ctl_os = node_os(c, controller) if controller is not None else None
    if controller is None or ctl_os not in SHIPPED:
        return
    ctl_pin = pin_for(version, ctl_os)
    if ctl_pin is None:
        return
    ctld = runs(ctl_pin, ctl_os)
    for os_name, nodes in sorted(by_os.items()):
        computes = [n for n in nodes if n.has("slurm.compute")]
        node_pin = pin_for(version, os_name)
        if not computes or node_pin is None:
            continue
        slurmd = runs(node_pin, os_name)
        distance = apart(ctld, slurmd)
        if distance is None:
            continue
        where = f"slurmd {slurmd} ({os_name}: {_names(computes)})"
        ctl = f"slurmctld {ctld} ({ctl_os}: {controller.hostname})"
        hint = f"the Slurm of each OS: {_shipped()}"
        if MAJORS.index(major(slurmd)) > MAJORS.index(major(ctld)):
            yield c.problem(path, f"{where} would be newer than {ctl}: Slurm needs the "
                            "controller at the newest version", code="slurm_skew", hint=hint)
        elif distance > MAX_APART:
            yield c.problem(path, f"{where} would be {distance} major releases behind {ctl}:"
                            f" Slurm supports at most {MAX_APART}", code="slurm_skew",
                            hint=hint)


def _per_os(c: Ctx, path: tuple[str, ...], version: dict[str, str],
            by_os: dict[str, list[Node]]) -> Iterator[Problem]:
    """The per-OS form: each entry what its OS ships, an entry for each OS nodes run."""
    for os_name, entry in sorted(version.items()):
        if major(entry) != SHIPPED[os_name]:
            yield c.problem((*path, os_name), f"{entry} is not the Slurm of {os_name}, "
                            f"which ships {SHIPPED[os_name]}: apt would ignore the pin",
                            code="slurm_version", hint=f"the Slurm of each OS: {_shipped()}")
    for os_name, nodes in sorted(by_os.items()):
        if os_name not in version:
            yield c.problem(path, f"no version for {os_name}, which {_names(nodes)} "
                            f"run (it ships {SHIPPED[os_name]})", code="slurm_version")


def _shipped() -> str:
    return ", ".join(f"{o} {v}" for o, v in sorted(SHIPPED.items()))


def _names(nodes: list[Node], limit: int = 3) -> str:
    shown = ", ".join(n.hostname for n in nodes[:limit])
    more = len(nodes) - limit
    return shown + (f" and {more} more" if more > 0 else "")
