"""The Salt of the nodes (inventory site.salt.version), of the lab's minions (built from
that pin) and of the master and tests (requirements.txt) is one version."""

from __future__ import annotations

from pathlib import Path

import yaml

from fleet.lab.image import salt_pin
from fleet.lab.paths import Paths

ROOT = Path(__file__).resolve().parents[2]


def _requirements_pin() -> str:
    pins = [line.split("==", 1)[1].strip()
            for line in (ROOT / "requirements.txt").read_text().splitlines()
            if line.lower().startswith("salt==")]
    assert len(pins) == 1, "requirements.txt must pin salt==VERSION exactly once"
    return pins[0]


def test_requirements_pin_the_sites_salt() -> None:
    site = yaml.safe_load((ROOT / "inventory.yaml").read_text())["site"]["salt"]["version"]
    assert _requirements_pin() == str(site), (
        "requirements.txt (master, tests) and inventory.yaml site.salt.version (nodes, lab "
        "minions) name different Salt releases: change them together")


def test_the_lab_image_takes_the_sites_pin(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text("site: {salt: {version: '3007.9'}}\n")
    assert salt_pin(Paths(tmp_path)) == "3007.9"
