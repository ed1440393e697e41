"""The real promtool (Debian/Ubuntu package `prometheus`; tools/install-host-deps.sh
installs it). Without it the tests that need it are skipped, loudly, with the reason."""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

PROMTOOL = shutil.which("promtool")
WHY = ("promtool is not installed: `apt-get install prometheus` (tools/install-host-deps.sh "
       "does it; its service must not run on this host); the alert rules are NOT checked")


def need() -> str:
    if PROMTOOL is None:
        warnings.warn(WHY, stacklevel=2)
        print(f"\n*** SKIPPED: {WHY} ***")
        pytest.skip(WHY)
    return PROMTOOL


def run(*args: str | Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([need(), *map(str, args)], capture_output=True, text=True,
                          input=stdin, timeout=120, check=False)


def dump(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
