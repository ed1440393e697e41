"""Shared test fixtures: the small inventory and a temp inventory writer (paths and the
real CLI: support.cli); every fleet state root of the run in a temporary directory."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.cli import SMALL
from support.statedirs import isolated


@pytest.fixture(scope="session", autouse=True)
def fleet_state_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Every ``$FLEET_..._STATE`` (and the audit log) of this run, and of every fleet
    process a test starts, under a temporary directory: no test reads the records a run
    on this machine left in /var/lib/fleet, nor leaves any there. A test that needs its
    own sets the variable again (monkeypatch) or passes the verb's --...-state-dir."""
    env = isolated(tmp_path_factory.mktemp("fleet-state"))
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


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
