"""The small inventory with the compute section of tests/fixtures/compute.yaml (small.yaml
itself has none: other tests install its GPU groups with Debian 12, which has no Python
3.12 for miniray's workers)."""

from __future__ import annotations

from pathlib import Path

FRAGMENT = Path(__file__).resolve().parents[1] / "fixtures" / "compute.yaml"


def with_compute(small_text: str) -> str:
    """``small_text`` with the compute section inserted before its ``nodes:``."""
    assert small_text.count("\nnodes:\n") == 1
    return small_text.replace("\nnodes:\n", "\n" + FRAGMENT.read_text() + "\nnodes:\n")
