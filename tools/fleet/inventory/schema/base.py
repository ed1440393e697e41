"""What every part of the inventory schema shares: the base model (strict, frozen, no extra
keys) and the name, host-range, OS and NVIDIA driver-branch types more than one subject uses.
"""


from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Discriminator, StringConstraints, Tag

NAME_PATTERN = r"^[a-z][a-z0-9-]{0,62}$"
HOST_PATTERN = r"^[a-z][a-z0-9-]*(\[\d+-\d+\][a-z0-9-]*)?$"
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
HostPattern = Annotated[str, StringConstraints(pattern=HOST_PATTERN)]


# an NVIDIA driver branch (Ubuntu's -server branch number, Debian's driver series)
DriverBranch = Annotated[str, StringConstraints(pattern=r"^[0-9]{3,4}$")]
# the OS releases fleet installs or runs (fleet/inventory/slurmcompat.py knows each)
OsName = Literal["ubuntu-24.04", "ubuntu-22.04", "debian-12"]


def _os_form(value: object) -> str:
    return "dict" if isinstance(value, dict) else "str"


T = TypeVar("T")
# one value for every OS release, or one per OS release (an archive's driver branch, a
# Slurm version); errors come from the form written only (the tags are pydantic's own
# names, dropped from the error's path)
PerOs = Annotated[Annotated[T, Tag("str")] | Annotated[dict[OsName, T], Tag("dict")],
                  Discriminator(_os_form)]

# one branch for every OS, or one per OS release: the archives name their drivers apart
# (Ubuntu 580-server, Debian 12 535)
BranchSpec = PerOs[DriverBranch]


# the site default of site.nvidia_branch: Canonical's -server (ERD) branch with signed
# precompiled open modules for the GA kernels of 24.04 and 22.04 (570-server is now empty
# transitional packages pulling 580-server: never pin a branch whose packages are
# transitional); Debian 12's non-free driver series (bookworm)
NVIDIA_BRANCHES: dict[OsName, str] = {"ubuntu-24.04": "580", "ubuntu-22.04": "580",
                                      "debian-12": "535"}


class Model(BaseModel):
    # Strict ints: YAML `yes` must not pass as 1. No inf/nan anywhere.
    # defer_build: one schema is built for the whole document when it is first validated,
    # instead of one per model at import time (start-up is most of a small render).
    # A field's description is the docstring under it, read by
    # fleet.inventory.reference for docs/inventory-reference.md's column, not by pydantic
    # (use_attribute_docstrings parses every model's source at import: a quarter of the
    # schema's import time, on every run of every verb).
    # An empty list or dict default is `Field(default=[])` (pydantic copies it for each
    # instance), not `default_factory=list`: pydantic reads every factory's signature when
    # it builds the schema, and list's alone costs inspect a parse of its text signature.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False,
                              defer_build=True)


# The config of a part the renderers also dump on its own (``model_dump`` of a profile's
# cpu, the site's apt): built with its class, its schema is reused by the Inventory's.
# Deferred, it was built twice: inside the Inventory's, and again for itself at its first
# dump (pydantic completes a deferred model only for itself), about 1 ms of every render.
DUMPED = ConfigDict(defer_build=False)
