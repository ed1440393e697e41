"""Fixtures of the monitoring tests: the real inventory rendered once."""

from __future__ import annotations

import pytest
from tests_paths import SITE

from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory


@pytest.fixture(scope="session")
def site_inv() -> Inventory:
    return load_inventory(SITE)
