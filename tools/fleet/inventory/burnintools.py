"""The burn-in's GPU tools that no OS archive packages, built on the nvidia role's nodes
from the inventory's pinned sources (``site.burnin_tools``, built by salt/nvidia/burnin.sls):
where each build lands, one definition for the state (pillar
``node:nvidia:burnin_tools``) and for the check that runs it (fleet.burnin.remote)."""

from __future__ import annotations

from typing import Any, NamedTuple

from fleet.inventory import schema

ROOT = "/opt/fleet/burnin"


class Tool(NamedTuple):
    """A tool built from its pin (``pin``: site.burnin_tools.<field>) into ``dir``
    (ROOT/<name>: ``<sha256>/`` per pin, ``current`` the one in use; <name> is its build
    recipe in salt/nvidia/defaults.yaml burnin:build too), ``binary`` its program in
    that tree, ``path`` the program of the pin in use."""

    field: str
    name: str
    binary: str
    pin: str
    dir: str
    path: str

    def artifact(self, site: schema.Site) -> schema.Artifact | None:
        return getattr(site.burnin_tools, self.field)  # type: ignore[no-any-return]


def _tool(field: str, name: str, binary: str) -> Tool:
    return Tool(field, name, binary, f"site.burnin_tools.{field}", f"{ROOT}/{name}",
                f"{ROOT}/{name}/current/{binary}")


_NCCL_TESTS = _tool("nccl_tests", "nccl-tests", "build/all_reduce_perf")
# the burn-in check -> the built tool it runs (nccl-tests is built with MPI: one build for
# the node's own all-reduce and the two-node one, fleet.burnin.pairjob)
TOOLS: dict[str, Tool] = {
    "gpu-stress": _tool("gpu_burn", "gpu-burn", "gpu_burn"),
    "nccl-allreduce": _NCCL_TESTS,
    "nccl-pair": _NCCL_TESTS,
}


def pillar(site: schema.Site) -> dict[str, Any]:
    """``node:nvidia:burnin_tools``: per tool its pin with where it is built (null: the
    pin is null, nvidia.burnin builds nothing of it)."""
    out: dict[str, Any] = {}
    for tool in dict.fromkeys(TOOLS.values()):
        art = tool.artifact(site)
        out[tool.name] = None if art is None else {
            "source": art.source, "sha256": art.sha256, "dir": tool.dir,
            "binary": tool.binary}
    return out
