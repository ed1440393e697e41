"""Regenerate the golden render trees with the real CLI: tests/golden/small from
tests/fixtures/small.yaml, tests/golden/lifecycle from it with
tests/fixtures/lifecycle-overlay.yaml (a node in each lifecycle state).

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
LIFECYCLE_OVERLAY = ROOT / "tests" / "fixtures" / "lifecycle-overlay.yaml"
LIFECYCLE = ROOT / "tests" / "golden" / "lifecycle"
# golden tree -> the render options that make it
TREES = {GOLDEN: ["-i", str(INVENTORY)],
         LIFECYCLE: ["-i", str(INVENTORY), "--overlay", str(LIFECYCLE_OVERLAY)]}


def main() -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    for golden, opts in TREES.items():
        golden.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "fleet", "render", "-q", *opts, "-o", str(golden)]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, check=False)
        lock = golden / ".render.lock"  # the writer's lock file is not part of the output
        lock.unlink(missing_ok=True)
        if proc.returncode != 0:
            print(f"update.py: fleet render exited {proc.returncode}", file=sys.stderr)
            return proc.returncode
        print(f"updated {golden.relative_to(ROOT)}")
    print("review with: git diff -- tests/golden/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
