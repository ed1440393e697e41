"""A throw-away copy of this venv's layout whose ``bin/`` holds only ``python`` (this
interpreter) and what a test puts there: fleet finds the Salt CLI beside its Python first
(fleet.master.runner.tool_path), so a STAND-IN ``salt`` goes there, not on PATH."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def venv_bin(root: Path) -> Path:
    """``root/bin`` of a venv sharing this one's site-packages; run ``root/bin/python``."""
    prefix = Path(sys.prefix)
    (root / "bin").mkdir(parents=True, exist_ok=True)
    (root / "pyvenv.cfg").write_text((prefix / "pyvenv.cfg").read_text())
    if not (root / "lib").exists():
        (root / "lib").symlink_to(prefix / "lib")
    python = root / "bin" / "python"
    if not python.exists():
        python.symlink_to(os.path.realpath(sys.executable))
    return root / "bin"
