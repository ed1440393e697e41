"""Fixtures shared by the renderer tests: the two inventories, loaded and rendered once."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.render import render_all

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "fixtures" / "small.yaml"
SITE = ROOT / "inventory.yaml"


@pytest.fixture(scope="session")
def small_inv() -> Inventory:
    return load_inventory(SMALL)


@pytest.fixture(scope="session")
def site_inv() -> Inventory:
    return load_inventory(SITE)


@pytest.fixture(scope="session")
def small_files(small_inv: Inventory) -> dict[str, str]:
    return render_all(small_inv)


@pytest.fixture(scope="session")
def site_files(site_inv: Inventory) -> dict[str, str]:
    return render_all(site_inv)


@pytest.fixture(scope="session", params=["small", "site"])
def rendered(request: pytest.FixtureRequest) -> tuple[Inventory, dict[str, str]]:
    """Both inventories in turn: (inventory, {path: text})."""
    if request.param == "small":
        return request.getfixturevalue("small_inv"), request.getfixturevalue("small_files")
    return request.getfixturevalue("site_inv"), request.getfixturevalue("site_files")


@pytest.fixture
def rendered_once(tmp_path: Path) -> tuple[Path, Path]:
    """The small inventory copied to tmp_path and rendered once by `fleet render` into
    tmp_path/out: (the output, the inventory file)."""
    from fleet import cli
    from render.helpers import SMALL

    out, inv_file = tmp_path / "out", tmp_path / "inventory.yaml"
    out.mkdir()
    inv_file.write_text(SMALL.read_text(encoding="utf-8"), encoding="utf-8")
    assert cli.main(["render", "-q", "-i", str(inv_file), "-o", str(out)]) == 0
    return out, inv_file
