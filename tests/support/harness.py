"""Shared pieces of the Salt render check (used by conftest.py, the tests and update_snapshots.py).

Salt itself is imported only when a renderer is made, so this imports without Salt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fleet.packages import highstates
from fleet.packages.highstates import write_secrets_root

__all__ = ["ROOT", "make_renderer", "roles_of", "write_secrets_root"]

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = ROOT / "tests" / "salt" / "snapshots"
# the OS every node is rendered for, and the others rendered for one node per role
DEFAULT_OS = "ubuntu-24.04"
OTHER_OS = ("ubuntu-22.04", "debian-12")


def make_renderer(tmp: Path, file_root: Path | None = None) -> tuple[Any, str]:
    """A saltrender.Renderer over salt/ (or `file_root`), pillar/ and a dummy secrets root."""
    saltrender = highstates.saltrender()  # imports Salt: only where Salt is installed
    secret_root = tmp / "secrets-pillar"
    key = write_secrets_root(secret_root)
    renderer = saltrender.Renderer(file_root or ROOT / "salt", ROOT / "pillar", secret_root,
                                   tmp / "cache")
    return renderer, key


def roles_of(renderer: Any) -> dict[str, list[str]]:
    """role -> nodes that have it, in pillar order."""
    out: dict[str, list[str]] = {}
    for node in renderer.nodes():
        for role in renderer.pillar(node)["node"]["roles"]:
            out.setdefault(role, []).append(node)
    return out
