"""The burn-in's GPU tools that no OS archive packages, built on the nvidia role's nodes
from the inventory's pinned sources (``site.burnin_tools``, built by salt/nvidia/burnin.sls):
where each build lands, one definition for the state (pillar
``node:nvidia:burnin_tools``) and for the check that runs it (fleet.burnin.remote)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleet.inventory import schema

ROOT = "/opt/fleet/burnin"


@dataclass(frozen=True)
class Tool:
    field: str
    """its pin: ``site.burnin_tools.<field>``"""
    name: str
    """its directory under ROOT (``<name>/<sha256>/`` per pin, ``<name>/current`` the one
    in use) and its build recipe in salt/nvidia/defaults.yaml (burnin:build)"""
    binary: str
    """the check's program, relative to the built tree"""

    @property
    def pin(self) -> str:
        return f"site.burnin_tools.{self.field}"

    @property
    def dir(self) -> str:
        return f"{ROOT}/{self.name}"

    @property
    def path(self) -> str:
        """The program of the pin in use."""
        return f"{self.dir}/current/{self.binary}"

    def artifact(self, site: schema.Site) -> schema.Artifact | None:
        return getattr(site.burnin_tools, self.field)  # type: ignore[no-any-return]


# the burn-in check -> the built tool it runs
TOOLS: dict[str, Tool] = {
    "gpu-stress": Tool("gpu_burn", "gpu-burn", "gpu_burn"),
    "nccl-allreduce": Tool("nccl_tests", "nccl-tests", "build/all_reduce_perf"),
}


def pillar(site: schema.Site) -> dict[str, Any]:
    """``node:nvidia:burnin_tools``: per tool its pin with where it is built (null: the
    pin is null, nvidia.burnin builds nothing of it)."""
    out: dict[str, Any] = {}
    for tool in TOOLS.values():
        art = tool.artifact(site)
        out[tool.name] = None if art is None else {
            "source": art.source, "sha256": art.sha256, "dir": tool.dir,
            "binary": tool.binary}
    return out
