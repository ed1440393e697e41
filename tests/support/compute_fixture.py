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


def write_pillar(root: Path) -> Path:
    """The small inventory with the compute section rendered: its pillar/ and a secrets
    root under ``root``, for the Salt render tests of the compute roles."""
    from fleet.inventory.load import parse
    from fleet.render import render_all
    from support import harness

    small = FRAGMENT.parent / "small.yaml"
    inv = parse(with_compute(small.read_text()), str(small))
    for path, text in render_all(inv).items():
        if path.startswith("pillar/"):
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
    harness.write_secrets_root(root / "secrets")
    return root


def render_ready_pillar(root: Path) -> Path:
    """write_pillar, with Salt's logging quiet and the Jinja compile cache on: what a
    module of render tests sets up once."""
    from fleet import saltrender

    out = write_pillar(root)
    saltrender.quiet_salt_logging()
    saltrender.enable_jinja_compile_cache()
    return out
