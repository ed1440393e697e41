"""Shared test fixtures: the small inventory and a temp inventory writer (paths and the
real CLI: support.cli)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli import SMALL


@pytest.fixture
def small_text() -> str:
    return SMALL.read_text()


@pytest.fixture
def inventory_file(tmp_path: Path, small_text: str):  # type: ignore[no-untyped-def]
    """Write an inventory text into a temp dir and return its path (default: the small one)."""

    def write(text: str = small_text, name: str = "inventory.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write
