"""The GPU burn-in checks of tools/fleet/burnin/runner.py on a machine with NVIDIA GPUs,
as `fleet burnin run` runs them on a node (the same runner, the same arguments): each
result as the runner's JSON, then a table for docs/benchmarks.md.

    python3 benchmarks/gpu_burnin.py [--seconds 60]     (make bench-gpu-burnin)

Needs nvidia-smi (the driver); the stress checks need gpu_burn and all_reduce_perf on PATH
or in --gpu-burn-dir / --nccl-tests-dir. No Ubuntu 24.04 package ships either:
    gpu_burn         github.com/wilicc/gpu-burn, `make` with nvidia-cuda-toolkit (multiverse)
    all_reduce_perf  github.com/NVIDIA/nccl-tests, `make` with nvidia-cuda-toolkit and
                     libnccl-dev (multiverse); its build/ holds all_reduce_perf
A check whose tool is missing is "not run: TOOL not installed" and counts as failed, as on
a node. Standard library only (a GPU machine needs no venv). Exit 0: every check passed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

RUNNER = Path(__file__).resolve().parent.parent / "tools" / "fleet" / "burnin" / "runner.py"
CHECKS = ("gpu-present", "gpu-stress", "nccl-allreduce")


def _smi(query: str) -> list[str]:
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=60, check=False)
    except OSError:
        return []
    return [ln.strip() for ln in r.stdout.splitlines() if ln.strip()] if r.returncode == 0 else []


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=int, default=60, help="gpu_burn's duration")
    p.add_argument("--gpu-burn-dir", type=Path)
    p.add_argument("--nccl-tests-dir", type=Path, help="nccl-tests' checkout (its build/)")
    args = p.parse_args()
    extra = [str(d) for d in (args.gpu_burn_dir,
                              args.nccl_tests_dir and args.nccl_tests_dir / "build") if d]
    env = {**os.environ, "PATH": os.pathsep.join([*extra, os.environ.get("PATH", "")])}
    names = _smi("name")
    mem = [int(m) for m in _smi("memory.total") if m.isdigit()]
    driver = (_smi("driver_version") or ["-"])[0]
    print(f"# machine: {len(names)} x {names[0] if names else 'no GPU (no nvidia-smi answer)'}, "
          f"driver {driver}, {os.cpu_count()} CPUs, {platform.node()}")
    rows, ok = [], True
    for check in CHECKS:
        argv = [sys.executable, str(RUNNER), check, "--seconds", str(args.seconds),
                "--expect-gpus", str(len(names)),
                # the card's own size: this measures, the profile judges on a node
                "--expect-memory-gb", str(int(min(mem) / 1024) if mem else 0)]
        r = subprocess.run(argv, capture_output=True, text=True, env=env, check=False,
                           timeout=args.seconds + 1800)
        print(r.stdout.strip() or r.stderr.strip())
        doc: dict[str, Any] = json.loads(r.stdout) if r.stdout.strip() else {
            "check": check, "passed": False, "figures": {}, "seconds": 0, "reason": r.stderr}
        ok = ok and bool(doc["passed"])
        figures: dict[str, float] = doc["figures"]
        figs = ", ".join(f"{k} {v:g}" for k, v in sorted(figures.items()))
        rows.append(f"| {check} | {'passed' if doc['passed'] else 'FAILED'} | {figs} | "
                    f"{doc['seconds']:.1f} | {doc.get('reason') or ''} |")
    print("\n| check | verdict | figures | seconds | reason |\n| --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
