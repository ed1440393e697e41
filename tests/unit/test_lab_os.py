"""LAB_OS: every lab OS has its overlay, its lab pillar matched on its osfinger, and an
inventory that validates through both overlays; an unknown LAB_OS is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fleet.inventory.load import load_inventory
from fleet.lab.paths import DEFAULT_LAB_OS, LAB_OSES, LabOSError, Paths

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", LAB_OSES)
def test_each_lab_os_has_its_overlay_and_pillar(name: str) -> None:
    paths = Paths(ROOT, name)
    top = yaml.safe_load((paths.lab_pillar / "top.sls").read_text())["lab"]
    target = f"osfinger:{paths.osfinger}"
    assert target in top, f"lab/pillar/top.sls does not match {target}"
    assert {"match": "grain"} in top[target]
    assert paths.os_pillar.stem in top[target] and paths.os_pillar.is_file()
    inv = load_inventory(paths.inventory, paths.overlays)
    assert len(inv.nodes) == 6


def test_the_os_overlays_set_their_own_mirrors() -> None:
    mirrors = {name: str(load_inventory(Paths(ROOT, name).inventory,
                                        Paths(ROOT, name).overlays).raw.site.apt.mirror)
               for name in LAB_OSES}
    assert "ubuntu" in mirrors["ubuntu-24.04"] and "debian" in mirrors["debian-12"]


def test_lab_os_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAB_OS", raising=False)
    assert Paths(ROOT).os == DEFAULT_LAB_OS == "ubuntu-24.04"
    monkeypatch.setenv("LAB_OS", "debian-12")
    assert Paths(ROOT).os == "debian-12" and Paths(ROOT).osfinger == "Debian-12"
    monkeypatch.setenv("LAB_OS", "centos-9")
    with pytest.raises(LabOSError) as exc:
        Paths(ROOT)
    assert "LAB_OS='centos-9' is not a lab OS; choose one of ubuntu-24.04, debian-12" in \
        str(exc.value)
