"""`fleet lab up` records the lab master's key fingerprint before it renders: the overlay
it writes carries `site.salt.master_finger` as `fleet keys finger` computes it, so every
lab minion and installer pins the lab master (issue: a plain install trusted the first
master it met)."""

from __future__ import annotations

import shutil
from pathlib import Path

from fleet.inventory.load import load_inventory
from fleet.lab import master
from fleet.lab.paths import Paths
from fleet.master.keys import master_finger
from fleet.render import render_all

ROOT = Path(__file__).resolve().parents[2]


def _checkout(tmp_path: Path) -> Paths:
    """A copy of the inventory and the lab overlays: .lab is written below tmp_path."""
    shutil.copy(ROOT / "inventory.yaml", tmp_path / "inventory.yaml")
    shutil.copytree(ROOT / "lab", tmp_path / "lab")
    return Paths(tmp_path, "ubuntu-24.04")


def test_the_lab_records_its_masters_finger_before_it_renders(tmp_path: Path) -> None:
    paths = _checkout(tmp_path)
    assert paths.finger_overlay not in paths.overlays  # nothing recorded yet
    finger = master.record_finger(paths)
    assert finger == master_finger(paths.master_root / "pki")
    assert (paths.master_root / "pki" / "master.pem").stat().st_mode & 0o077 == 0
    assert paths.overlays[-1] == paths.finger_overlay
    inv = load_inventory(paths.inventory, paths.overlays)
    assert inv.raw.site.salt.master_finger == finger
    # the rendered minion pillar and the installers carry it
    out = render_all(inv)
    pinned = [p for p, text in out.items() if finger in text]
    assert any(str(p).startswith("pillar/") for p in pinned)
    assert any(str(p).startswith("pxe/") for p in pinned)


def test_a_second_bring_up_keeps_the_key_and_rewrites_nothing(tmp_path: Path) -> None:
    paths = _checkout(tmp_path)
    first = master.record_finger(paths)
    pub = master.key_path(paths).read_bytes()
    mtime = paths.finger_overlay.stat().st_mtime_ns
    assert master.record_finger(paths) == first
    assert master.key_path(paths).read_bytes() == pub
    assert paths.finger_overlay.stat().st_mtime_ns == mtime
