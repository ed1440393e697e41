"""Where the Salt command-line tools are: on PATH, or beside this Python (the venv's)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def tool_path(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    beside = Path(sys.executable).parent / name
    return os.fspath(beside) if beside.exists() else name
