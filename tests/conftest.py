"""Shared test fixtures: paths, the small inventory, and a way to run the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SMALL = FIXTURES / "small.yaml"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def run_fleet(*args: str, cwd: Path | None = None) -> Run:
    """Run `python -m fleet ARGS` as a separate process, like a user would."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    proc = subprocess.run([sys.executable, "-m", "fleet", *args], cwd=cwd or ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    return Run(proc.returncode, proc.stdout, proc.stderr)


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
