"""Where the lab keeps its state: everything under <checkout>/.lab (git-ignored)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import overload

PREFIX = "fleet-lab"
NETWORK = f"{PREFIX}-prov"
IMAGE = f"localhost/{PREFIX}-minion"

# the OS the lab's minions run: `make lab LAB_OS=...` (docs/lab.md)
LAB_OSES = ("ubuntu-24.04", "debian-12")
DEFAULT_LAB_OS = "ubuntu-24.04"


class LabOSError(ValueError):
    pass


def lab_os_from_env() -> str:
    name = os.environ.get("LAB_OS", "") or DEFAULT_LAB_OS
    if name not in LAB_OSES:
        raise LabOSError(f"LAB_OS={name!r} is not a lab OS; choose one of "
                         f"{', '.join(LAB_OSES)} (default {DEFAULT_LAB_OS})")
    return name


class _Below:
    """A read-only attribute of :class:`Paths`: ``parts`` joined below its attribute
    ``base`` (``render = _Below("lab", "render")`` is ``self.lab / "render"``)."""

    def __init__(self, base: str, *parts: str) -> None:
        self.base, self.parts = base, parts

    @overload
    def __get__(self, obj: None, owner: type[Paths]) -> _Below: ...

    @overload
    def __get__(self, obj: Paths, owner: type[Paths]) -> Path: ...

    def __get__(self, obj: Paths | None, owner: type[Paths]) -> Path | _Below:
        if obj is None:
            return self
        base: Path = getattr(obj, self.base)
        return base.joinpath(*self.parts)


@dataclass(frozen=True)
class Paths:
    repo: Path
    os: str = field(default_factory=lab_os_from_env)

    @classmethod
    def find(cls) -> Paths:
        root = Path(os.environ.get("FLEET_CHECKOUT", Path.cwd())).resolve()
        return cls(root)

    lab = _Below("repo", ".lab")
    # site.salt.master_finger of the lab master, as `fleet keys finger` prints it
    finger_overlay = _Below("repo", ".lab", "master-finger.yaml")
    # what every lab OS shares; `os_overlay` is applied after it
    overlay = _Below("repo", "lab", "overlay.yaml")

    @property
    def os_overlay(self) -> Path:
        return self.repo / "lab" / "os" / f"{self.os}.yaml"

    @property
    def overlays(self) -> list[Path]:
        """The lab overlay, its OS's, and the master's recorded key fingerprint once
        `fleet lab up` has written it (master.record_finger)."""
        extra = [self.finger_overlay] if self.finger_overlay.is_file() else []
        return [self.overlay, self.os_overlay, *extra]

    def overlay_args(self) -> list[str]:
        """The lab's overlays as `fleet ... --overlay` arguments."""
        return [arg for f in self.overlays for arg in ("--overlay", str(f))]

    @property
    def osfinger(self) -> str:
        """Salt's ``osfinger`` grain of the lab's minions ("Ubuntu-24.04", "Debian-12")."""
        distro, release = self.os.split("-", 1)
        return f"{distro.capitalize()}-{release}"

    @property
    def os_pillar(self) -> Path:
        """The lab pillar of this OS (lab/pillar/top.sls matches it on osfinger)."""
        return self.lab_pillar / f"os_{self.os.replace('-', '_').replace('.', '_')}.sls"

    @property
    def os_marker(self) -> Path:
        """The OS of the lab that is up (written by `fleet lab up`)."""
        return self.lab / "os"

    # the plain places, each a path below the checkout or below .lab
    lab_pillar = _Below("repo", "lab", "pillar")
    inventory = _Below("repo", "inventory.yaml")
    render = _Below("lab", "render")
    secrets = _Below("lab", "secrets")
    # the lab's site package repository (fleet.lab.siterepo): the inventory's site.apt.repo
    # on head-01 and in the image builds, read-only
    site_repo = _Below("lab", "repo")
    standins = _Below("repo", "lab", "standins.yaml")
    salt_etc = _Below("lab", "etc", "salt")
    master_root = _Below("lab", "master")
    keys = _Below("lab", "keys")
    # head-01's /etc/salt/pki (its own minion key in minion/): a host directory, so that
    # the master's backup, which runs on this host, reaches it as it reaches a real
    # head's (fleet.backup.paths.MINION_PKI), and it dies with head-01's container
    head_pki = _Below("lab", "head-pki")
    image_dir = _Below("lab", "image")
    bin = _Below("lab", "bin")
    containers_conf = _Below("lab", "containers.conf")
    venv_bin = _Below("repo", ".venv", "bin")
