"""The nodes' highstates rendered in-process for their apt facts (check-packages, the site
repository's fill): one node per set of roles, through the tests' renderer
(tests/support/saltrender.py, which imports Salt)."""

from __future__ import annotations

import importlib
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]


def salt_harness(repo: Path = REPO) -> tuple[Any, Any]:
    """The tests' in-process highstate renderer (tests/support; it imports Salt)."""
    tests = str(repo / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    harness = importlib.import_module("support.harness")
    saltrender = importlib.import_module("support.saltrender")
    saltrender.quiet_salt_logging()
    saltrender.enable_jinja_compile_cache()
    return harness, saltrender


@contextmanager
def renderer(root: Path) -> Iterator[Any]:
    """A renderer of ``root``'s salt/ over its pillar/ (with a throw-away secrets root)."""
    harness, saltrender = salt_harness()
    with tempfile.TemporaryDirectory() as tmp:
        secrets = Path(tmp) / "secrets"
        harness.write_secrets_root(secrets)
        yield saltrender.Renderer(root / "salt", root / "pillar", secrets, Path(tmp) / "cache")


def role_sets(renderer: Any) -> dict[tuple[str, ...], str]:
    """One node (the first in pillar order) per set of roles."""
    out: dict[tuple[str, ...], str] = {}
    for node in renderer.nodes():
        roles = tuple(sorted(renderer.pillar(node)["node"]["roles"]))
        out.setdefault(roles, node)
    return out
