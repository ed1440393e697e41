"""Parallel reinstall in the lab: ``fleet reinstall`` of 1, 2 and 3 lab GPU nodes at once
(tests/lab/test_reinstall_parallel.py's benchmark runs: the real CLI, fake BMCs, fake
hardware), wall time and each step's time per node, median over the runs.

    flock /tmp/fleet-lab.lock python benchmarks/bench_reinstall_parallel.py --run 1,2,3
    python benchmarks/bench_reinstall_parallel.py          # the table of what was measured

``--run`` runs the lab benchmark (FLEET_LAB=1 FLEET_LAB_KEEP=1) once per size given; every
run (the lab test's own 2-node run too) is appended to ``.lab/reinstall-parallel-bench
.json``; the table is printed as markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".lab" / "reinstall-parallel-bench.json"
sys.path.insert(0, str(ROOT / "tools"))
from fleet.reinstall.steps import STEP_NAMES as STEPS  # noqa: E402


def table(runs: list[dict[str, Any]]) -> list[str]:
    by: dict[int, list[dict[str, Any]]] = {}
    for r in runs:
        by.setdefault(int(r["parallel"]), []).append(r)
    head = "| nodes at once | runs | wall | " + " | ".join(STEPS) + " |"
    lines = [head, "|" + "--:|" * (3 + len(STEPS))]
    for n in sorted(by):
        rs = by[n]
        wall = statistics.median(r["wall"] for r in rs)
        cells = []
        for step in STEPS:
            # per step: the median over runs of the slowest node of the run
            per_run = [max(s.get(step, 0.0) for s in r["steps"].values()) for r in rs]
            cells.append(f"{statistics.median(per_run):.1f}")
        lines.append(f"| {n} | {len(rs)} | {wall:.0f} s | " + " | ".join(cells) + " |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", metavar="SIZES", help="comma-separated sizes to run, e.g. 1,2,3")
    args = ap.parse_args()
    if args.run:
        env = {**os.environ, "FLEET_LAB": "1", "FLEET_LAB_KEEP": "1",
               "FLEET_BENCH_REINSTALL": args.run}
        rc = subprocess.run([sys.executable, "-m", "pytest", "-v", "-x", "-p",
                             "no:cacheprovider", "tests/lab/test_reinstall_parallel.py",
                             "-k", "bench"], cwd=ROOT, env=env, check=False).returncode
        if rc != 0:
            return rc
    if not DATA.exists():
        print(f"no runs in {DATA}: --run 1,2,3 first", file=sys.stderr)
        return 4
    for line in table(json.loads(DATA.read_text())):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
