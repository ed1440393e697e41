"""Where the lab keeps its state: everything under <checkout>/.lab (git-ignored)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

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


@dataclass(frozen=True)
class Paths:
    repo: Path
    os: str = field(default_factory=lab_os_from_env)

    @classmethod
    def find(cls) -> Paths:
        root = Path(os.environ.get("FLEET_CHECKOUT", Path.cwd())).resolve()
        return cls(root)

    @property
    def lab(self) -> Path:
        return self.repo / ".lab"

    @property
    def overlay(self) -> Path:
        """What every lab OS shares; `os_overlay` is applied after it."""
        return self.repo / "lab" / "overlay.yaml"

    @property
    def os_overlay(self) -> Path:
        return self.repo / "lab" / "os" / f"{self.os}.yaml"

    @property
    def overlays(self) -> list[Path]:
        return [self.overlay, self.os_overlay]

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

    @property
    def lab_pillar(self) -> Path:
        return self.repo / "lab" / "pillar"

    @property
    def inventory(self) -> Path:
        return self.repo / "inventory.yaml"

    @property
    def render(self) -> Path:
        return self.lab / "render"

    @property
    def secrets(self) -> Path:
        return self.lab / "secrets"

    @property
    def salt_etc(self) -> Path:
        return self.lab / "etc" / "salt"

    @property
    def master_root(self) -> Path:
        return self.lab / "master"

    @property
    def keys(self) -> Path:
        return self.lab / "keys"

    @property
    def image_dir(self) -> Path:
        return self.lab / "image"

    @property
    def bin(self) -> Path:
        return self.lab / "bin"

    @property
    def containers_conf(self) -> Path:
        return self.lab / "containers.conf"

    @property
    def venv_bin(self) -> Path:
        return self.repo / ".venv" / "bin"
