"""Where the lab keeps its state: everything under <checkout>/.lab (git-ignored)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PREFIX = "fleet-lab"
NETWORK = f"{PREFIX}-prov"
IMAGE = f"localhost/{PREFIX}-minion"


@dataclass(frozen=True)
class Paths:
    repo: Path

    @classmethod
    def find(cls) -> Paths:
        root = Path(os.environ.get("FLEET_CHECKOUT", Path.cwd())).resolve()
        return cls(root)

    @property
    def lab(self) -> Path:
        return self.repo / ".lab"

    @property
    def overlay(self) -> Path:
        return self.repo / "lab" / "overlay.yaml"

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
