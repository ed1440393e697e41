"""Regenerate the golden render tree of tests/fixtures/small.yaml with the real CLI.

Run after a deliberate change to a renderer or template, then review the diff:

    .venv/bin/python tests/golden/update.py
    git diff tests/golden/
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INVENTORY = ROOT / "tests" / "fixtures" / "small.yaml"
GOLDEN = ROOT / "tests" / "golden" / "small"


def main() -> int:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    cmd = [sys.executable, "-m", "fleet", "render", "-q",
           "-i", str(INVENTORY), "-o", str(GOLDEN)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, check=False)
    lock = GOLDEN / ".render.lock"  # the writer's lock file is not part of the output
    lock.unlink(missing_ok=True)
    if proc.returncode != 0:
        print(f"update.py: fleet render exited {proc.returncode}", file=sys.stderr)
        return proc.returncode
    print(f"updated {GOLDEN.relative_to(ROOT)}; review with: git diff -- tests/golden/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
