"""The NVIDIA driver branch of a profile: ``site.nvidia_branch`` with the profile's
``gpu.driver_branch`` over it, one per OS release (pillar ``node:nvidia:branches``; the
nvidia role takes the entry of the OS it runs on)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from fleet.inventory import schema
from fleet.problems import Problem

if TYPE_CHECKING:
    from fleet.inventory.checks.ctx import Ctx

OSES: tuple[str, ...] = schema.OsName.__args__  # type: ignore[attr-defined]


def _per_os(spec: str | dict[schema.OsName, str] | None) -> dict[str, str]:
    if spec is None:
        return {}
    if isinstance(spec, str):
        return dict.fromkeys(OSES, spec)
    return {str(k): v for k, v in spec.items()}


def branches(site: schema.Site, profile: schema.Profile) -> dict[str, str]:
    """OS release -> driver branch for the nodes of ``profile`` (empty: none given)."""
    own = profile.gpu.driver_branch if profile.gpu is not None else None
    return _per_os(site.nvidia_branch) | _per_os(own)


def check_nvidia_branch(c: Ctx) -> Iterator[Problem]:
    """Every profile of a node group with role nvidia has a branch for the site's OS."""
    raw = c.raw
    site_os = f"{raw.site.os.distro}-{raw.site.os.release}"
    seen: set[str] = set()
    for gname, group in raw.node_groups.items():
        profile = raw.profiles.get(group.profile)
        if "nvidia" not in group.roles or profile is None or group.profile in seen:
            continue
        seen.add(group.profile)
        if site_os not in branches(raw.site, profile):
            where: tuple[str | int, ...] = (
                ("profiles", group.profile, "gpu", "driver_branch")
                if profile.gpu is not None and profile.gpu.driver_branch is not None
                else ("site", "nvidia_branch") if raw.site.nvidia_branch is not None
                else ("node_groups", gname, "roles"))
            yield c.problem(where,
                            f"role nvidia needs a driver branch for {site_os}: profile "
                            f"{group.profile!r} (node group {gname}) has none",
                            code="missing",
                            hint="set site.nvidia_branch (e.g. {ubuntu-24.04: '580', "
                                 "debian-12: '535'}) or profiles."
                                 f"{group.profile}.gpu.driver_branch")
