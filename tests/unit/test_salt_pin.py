"""The Salt of the nodes (inventory site.salt.version), of the lab's minions (built from
that pin) and of the master and tests (requirements.txt) is one version."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from fleet.inventory.load import InventoryError
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


def _lab_repo(tmp: Path) -> Paths:
    """A copy of the repository's inventory and lab overlays (paths.Paths reads them)."""
    shutil.copy(ROOT / "inventory.yaml", tmp / "inventory.yaml")
    shutil.copytree(ROOT / "lab", tmp / "lab", ignore=shutil.ignore_patterns("pillar"))
    return Paths(tmp)


def test_the_lab_image_takes_the_sites_pin(tmp_path: Path) -> None:
    assert salt_pin(_lab_repo(tmp_path)) == _requirements_pin()


def test_the_lab_image_reads_the_pin_through_the_lab_overlays(tmp_path: Path) -> None:
    # the last overlay (the recorded master finger's file) sets another version: the
    # loader applies it, where reading inventory.yaml alone would not
    paths = _lab_repo(tmp_path)
    paths.finger_overlay.parent.mkdir()
    paths.finger_overlay.write_text("site: {salt: {version: '3007.99'}}\n")
    assert salt_pin(paths) == "3007.99"


def test_the_lab_image_refuses_an_invalid_inventory(tmp_path: Path) -> None:
    paths = _lab_repo(tmp_path)
    paths.finger_overlay.parent.mkdir()
    paths.finger_overlay.write_text("site: {salt: {version: 'latest'}}\n")
    with pytest.raises(InventoryError) as err:
        salt_pin(paths)
    [problem] = err.value.problems
    assert "site.salt.version" in str(problem) and "master-finger.yaml" in str(problem)
