"""Cross-object rules, run on the expanded inventory after the schema has passed.

Each rule is a generator of :class:`Problem`; all of them run, so one ``fleet validate``
reports every error. A rule that finds a collision reports it at the later occurrence
and names where the first one is. The rules live by subject: ``addresses``, ``services``,
``hardware`` and ``install`` here, Slurm versions, lifecycle and the NVIDIA branch in their
own modules of :mod:`fleet.inventory`; all read one :class:`~.ctx.Ctx`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fleet.inventory.checks import addresses, backup, hardware, install, services
from fleet.inventory.checks.ctx import Ctx, Rule
from fleet.inventory.compute import check_compute
from fleet.inventory.lifecycle import check_lifecycle
from fleet.inventory.nvidia import check_nvidia_branch
from fleet.inventory.slurmcompat import check_slurm_versions
from fleet.problems import Problem

if TYPE_CHECKING:
    from fleet.forks import Later

__all__ = ["RULES", "Ctx", "checking", "run_all"]

RULES: tuple[Rule, ...] = (
    addresses.check_networks,
    addresses.check_network_addresses,
    addresses.check_master_address,
    services.check_service_ports,
    install.check_paths,
    install.check_apt_cache,
    install.check_install_media,
    addresses.check_macs,
    addresses.check_serials,
    addresses.check_addresses,
    addresses.check_switch_ports,
    hardware.check_hardware,
    hardware.check_memberships,
    hardware.check_roles,
    hardware.check_profiles,
    services.check_salt_master,
    backup.check_backup,
    services.check_monitoring,
    services.check_slurm,
    services.check_mkv,
    services.check_mkv_ports,
    hardware.check_fabrics,
    check_slurm_versions,
    hardware.check_racks,
    check_lifecycle,
    check_nvidia_branch,
    check_compute,
)


# From this many nodes on (with a second CPU), the two costliest rules run in a forked child
# beside the others: at 10,000 nodes they take 0.07 s of the rules' 0.15 (a third one more
# made the child the slower; docs/benchmarks.md, "Render").
FORK_MIN_NODES = 1000
_FORKED = frozenset({addresses.check_addresses, addresses.check_macs})


def run_all(c: Ctx) -> list[Problem]:
    """Every rule's problems, in the order of :data:`RULES`."""
    from fleet import forks

    if len(c.nodes) < FORK_MIN_NODES or forks.cpus() < 2:
        return [p for rule in RULES for p in rule(c)]
    forked = [r for r in RULES if r in _FORKED]
    here = [r for r in RULES if r not in _FORKED]
    child = forks.Child(lambda: _each(c, forked), what="the inventory's rule checker")
    try:
        found = dict(zip(here, _each(c, here), strict=True))
    except BaseException:
        child.close()
        raise
    found.update(zip(forked, child.result(), strict=True))
    return [p for rule in RULES for p in found[rule]]


def checking(c: Ctx, *, behind: bool = False) -> Later[list[Problem]]:
    """Every rule's problems (as :func:`run_all`), found by one forked child while the
    caller goes on, where ``behind`` asks for it and the inventory is as large as for
    :data:`FORK_MIN_NODES`: ``fleet render`` renders meanwhile, and writes nothing before
    their result (:class:`fleet.inventory.load.Verdict`). The child sees the inventory as it
    was at the fork."""
    from fleet import forks

    if behind and len(c.nodes) >= FORK_MIN_NODES and forks.cpus() > 1:
        return forks.Later(lambda: [p for rule in RULES for p in rule(c)], fork=True,
                           what="the inventory's rule checker")
    return forks.Later(lambda: run_all(c), fork=False, what="")


def _each(c: Ctx, rules: Sequence[Rule]) -> list[list[Problem]]:
    return [list(rule(c)) for rule in rules]
