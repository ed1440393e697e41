"""The checkout's paths and the real ``fleet`` command line, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SMALL = FIXTURES / "small.yaml"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def run_fleet(*args: str, cwd: Path | None = None, timeout: float = 300) -> Run:
    """Run `python -m fleet ARGS` as a separate process, like a user would."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    proc = subprocess.run([sys.executable, "-m", "fleet", *args], cwd=cwd or ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    return Run(proc.returncode, proc.stdout, proc.stderr)
