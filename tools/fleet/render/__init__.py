"""Renderers: pure functions from a validated inventory to ``{relative path: text}``."""

from __future__ import annotations

from fleet.inventory.model import Inventory
from fleet.render import pillar, pxe


def render_all(inv: Inventory) -> dict[str, str]:
    files = pillar.render(inv)
    files.update(pxe.render(inv))
    return dict(sorted(files.items()))
