"""The flags `fleet mkv rebuild|rebalance` runs with are the ones the mkv master unit that
Salt renders runs with (one definition: the inventory, through the pillar)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleet.inventory.load import load_inventory
from fleet.mkv.flags import array_flags
from support import harness

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("array", ["training", "cache", "models"])
def test_fleet_mkv_flags_are_the_rendered_units(rendered: dict[str, Any], array: str) -> None:
    inv = load_inventory(ROOT / "inventory.yaml")
    flags = array_flags(inv, array)
    result = rendered["results"][(flags.master, harness.DEFAULT_OS)]
    unit = result.files[f"mkv-master-file-managed-unit-{array}"]
    line = next(x for x in unit.splitlines() if x.startswith("ExecStart="))
    argv = line.removeprefix("ExecStart=").split()
    assert argv == flags.argv(argv[0], "server")
