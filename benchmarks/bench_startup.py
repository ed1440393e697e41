"""Start-up and render cost of the ``fleet`` command line, old code against new, in one run.

Both versions run from fresh copies of their ``tools/`` (``git archive``, no ``__pycache__``)
with the same interpreter, one run of each in turn (old, new, old, new, ...), so both see
the same machine and the same load. Each case is a whole process, timed from spawn to exit:
wall seconds and CPU seconds (user + system, from ``wait4``). Cases:

- ``fleet --help`` (warm bytecode);
- ``fleet validate`` and ``fleet render`` of the site's ``inventory.yaml`` (the render into
  its own earlier output: it writes nothing), with warm bytecode and without any
  (``PYTHONDONTWRITEBYTECODE=1`` on a copy that never had a ``__pycache__``: every run
  compiles every module it imports, as on a read-only install or the build machines);
- ``fleet render`` of a 10,000-node inventory (``benchmarks/gen_inventory.py``, seed 1).

    .venv/bin/python benchmarks/bench_startup.py --runs 7 --write docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report

ROOT = report.ROOT
SECTION = "## Start-up: old code against new"
CONSOLE = "import sys; from fleet.cli import main; sys.exit(main())"  # as .venv/bin/fleet


@dataclass
class Series:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def timed(argv: Sequence[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall, user + system CPU) of one process, from spawn to exit."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def export(ref: str | None, dest: Path) -> Path:
    """``tools/`` of commit ``ref`` (None: the working tree's), with no bytecode."""
    dest.mkdir(parents=True)
    if ref is None:
        shutil.copytree(ROOT / "tools", dest / "tools",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        return dest / "tools"
    archive = dest / "tools.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", ref, "tools"], stdout=out,
                       check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    archive.unlink()
    return dest / "tools"


@dataclass
class Case:
    name: str
    args: list[str]
    cold: bool = False  # no bytecode: a copy never compiled, nothing written


def cases(site: Path, big: Path, work: Path) -> list[Case]:
    return [
        Case("fleet --help", ["--help"]),
        Case("validate site", ["validate", "-q", "-i", str(site)]),
        Case("render site", ["render", "-q", "-i", str(site), "-o", str(work / "out-{v}")]),
        Case("validate site, no bytecode", ["validate", "-q", "-i", str(site)], cold=True),
        Case("render site, no bytecode",
             ["render", "-q", "-i", str(site), "-o", str(work / "out-{v}")], cold=True),
        Case("render 10,000 nodes",
             ["render", "-q", "-i", str(big), "-o", str(work / "big-{v}")]),
    ]


def run(case: Case, version: str, tools: dict[str, Path], work: Path) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(tools[version + ("-cold" if case.cold else "")])}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if case.cold:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    argv = [sys.executable, "-c", CONSOLE, *(a.replace("{v}", version) for a in case.args)]
    return timed(argv, env, work)


def measure(old: str, runs: int, nodes: int, work: Path) -> dict[str, dict[str, Series]]:
    tools = {"old": export(old, work / "old"), "new": export(None, work / "new"),
             "old-cold": export(old, work / "old-cold"),
             "new-cold": export(None, work / "new-cold")}
    big = work / f"inv-{nodes}.yaml"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gen_inventory.py"), "--nodes",
                    str(nodes), "-o", str(big)], check=True)
    results: dict[str, dict[str, Series]] = {}
    for case in cases(ROOT / "inventory.yaml", big, work):
        for version in ("old", "new"):  # warm-up: bytecode written, outputs rendered once
            run(case, version, tools, work)
        series = {"old": Series(), "new": Series()}
        for i in range(runs):
            for version in ("old", "new"):
                wall, cpu = run(case, version, tools, work)
                series[version].wall.append(wall)
                series[version].cpu.append(cpu)
                print(f"{case.name}: {version} run {i + 1}/{runs}: {wall:.3f}s wall, "
                      f"{cpu:.3f}s CPU", file=sys.stderr, flush=True)
        results[case.name] = series
    return results


def _fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def section(results: dict[str, dict[str, Series]], old: str, runs: int, load: str) -> str:
    rows = []
    for name, s in results.items():
        ratio = statistics.median(s["new"].cpu) / statistics.median(s["old"].cpu)
        rows.append(f"| {name} | {_fmt(s['old'].wall)} | {_fmt(s['new'].wall)} | "
                    f"{_fmt(s['old'].cpu)} | {_fmt(s['new'].cpu)} | {ratio:.2f} |")
    return "\n".join([
        SECTION, "",
        "<!-- Written by benchmarks/bench_startup.py (`make bench-startup`); rerun it rather "
        "than editing this section. -->", "",
        f"Old is commit `{old}`, new is `{report.commit()}`; both from fresh copies of "
        "`tools/`, run by the same interpreter as `.venv/bin/fleet` runs them, one run of "
        f"each in turn. Seconds: median of {runs} runs (min-max); CPU is user + system of "
        "the whole process. *No bytecode*: `PYTHONDONTWRITEBYTECODE=1` on a copy that never "
        "had a `__pycache__` (every imported module compiled on every run). The 10,000-node "
        "inventory is `benchmarks/gen_inventory.py --nodes 10000` (seed 1).", "",
        "### Machine", "",
        f"- CPU: {report.cpu_model()}, {os.cpu_count()} CPUs; memory {report.mem_total()}",
        f"- OS: {report.os_name()}; Python {sys.version.split()[0]}",
        f"- load average before the runs: {load}; after: {report.load_average()} (a shared "
        "machine: other sessions' work inflates wall times more than CPU times)", "",
        "### Reproduce", "", "```sh", "make bench-startup", "```", "",
        "### Results", "",
        "| case | old wall s | new wall s | old CPU s | new CPU s | new/old CPU |",
        "|---|---|---|---|---|---|",
        *rows,
    ])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", default="081e1e3", help="the old commit (default 081e1e3)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--write", type=Path, metavar="FILE",
                    help="replace this benchmark's section of FILE (docs/benchmarks.md)")
    args = ap.parse_args(argv)
    load = report.load_average()
    with tempfile.TemporaryDirectory(prefix="fleet-bench-startup-") as tmp:
        results = measure(args.old, args.runs, args.nodes, Path(tmp))
    text = section(results, args.old, args.runs, load)
    print(text)
    if args.write:
        report.replace_section(args.write, SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
