"""Renderers: pure functions from a validated inventory to ``{relative path: text}``."""

from __future__ import annotations

from fleet.inventory.model import Inventory


def render_all(inv: Inventory) -> dict[str, str]:
    from fleet.render import pillar, pxe  # imported on use: `fleet validate` needs neither

    files = pillar.render(inv)
    files.update(pxe.render(inv))
    return dict(sorted(files.items()))
