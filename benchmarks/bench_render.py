"""Whole-process benchmarks of ``fleet render`` and ``fleet validate``.

For each inventory size (the site's ``inventory.yaml`` and generated ones, see
``gen_inventory.py``) this times four cases, each run a fresh ``fleet ... -q`` process:

- cold:      ``fleet render`` into an empty output directory;
- rerender:  ``fleet render`` again with nothing changed (the idempotent case);
- onechange: ``fleet render`` after one node's MAC changed (the everyday edit);
- validate:  ``fleet validate`` only.

Wall time is measured from spawn to exit; user/sys time and peak RSS (``ru_maxrss``) are
those of that one process as returned by ``wait4()`` (per child, never accumulated over
runs). Output goes to ``benchmarks/out/`` (git-ignored), on the checkout's file system
like a real ``make render``; ``--tmpdir`` moves it. Medians of ``--runs`` runs are
reported with min and max, and compared with the targets. ``--write FILE`` replaces only
the ``## Render`` section of FILE, so other sections stay.

    .venv/bin/python benchmarks/bench_render.py --runs 7 --write docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_inventory import write_inventory
from report import cpu_model, mem_total, os_name, read_quiet, replace_section

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_INVENTORY = ROOT / "inventory.yaml"
# Output goes where `make render` writes: the checkout's file system (git-ignored dir).
DEFAULT_TMPDIR = ROOT / "benchmarks" / "out"
CASES = ("cold", "rerender", "onechange", "validate")
RENDERS = ("cold", "rerender", "onechange")
CASE_TEXT = {
    "cold": "render, empty output dir",
    "rerender": "render, nothing changed",
    "onechange": "render, one node changed",
    "validate": "validate only",
}
SECTION = "## Render"
MB = 1_000_000

# Targets (docs/benchmarks.md lists them with the results).
DEFAULT_LIMIT_S = 1.0  # site inventory, validate + render, whole process, 2 cores
COLD_LIMIT_S = 0.3  # site inventory, cold render (issue 37)
BIG_LIMIT_S = 4.0  # 10,000 nodes, a full render (issue 37)
EDIT_LIMIT_S = 1.0  # 10,000 nodes, one node changed (issue 37)
BIG_RSS_LIMIT = 1.5e9  # bytes, 10,000 nodes
RATIO_LIMIT = 12.0  # 10k / 1k wall time
CLOSE = 0.8  # a result above 80 % of its limit is "close"


class BenchError(Exception):
    pass


@dataclass(frozen=True)
class Sample:
    wall_s: float
    user_s: float
    sys_s: float
    maxrss: int  # bytes
    other: float  # CPUs kept busy by other processes meanwhile, on the CPUs used


@dataclass(frozen=True)
class Stats:
    runs: int
    wall_median: float
    wall_min: float
    wall_max: float
    user_median: float
    sys_median: float
    rss_median: float
    rss_max: int
    other_median: float
    cpu_median: float  # user + sys of each run

    @classmethod
    def of(cls, samples: Sequence[Sample]) -> Stats:
        walls = [s.wall_s for s in samples]
        return cls(len(samples), statistics.median(walls), min(walls), max(walls),
                   statistics.median(s.user_s for s in samples),
                   statistics.median(s.sys_s for s in samples),
                   statistics.median(s.maxrss for s in samples), max(s.maxrss for s in samples),
                   statistics.median(s.other for s in samples),
                   statistics.median(s.user_s + s.sys_s for s in samples))


@dataclass(frozen=True)
class Result:
    label: str  # "default", "1000", "10000" or a file name
    nodes: int
    inventory_bytes: int
    files: int  # rendered files
    output_bytes: int
    stats: dict[str, Stats]


@dataclass(frozen=True)
class Target:
    text: str
    measured: str
    value: float
    limit: float

    @property
    def status(self) -> str:
        if self.value >= self.limit:
            return "**missed**"
        return "met (close)" if self.value >= CLOSE * self.limit else "met"


# --- running one process -------------------------------------------------------------


_CPUS: set[int] = set()  # the CPUs the runs are pinned to (see pin())
_TICK = os.sysconf("SC_CLK_TCK")


def busy_seconds() -> float:
    """CPU time spent so far on the pinned CPUs, by everything (from /proc/stat)."""
    total = 0
    for line in read_quiet("/proc/stat").splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in _CPUS:
            ticks = [int(f) for f in fields]
            total += sum(ticks[:8]) - ticks[3] - ticks[4]  # all but idle and iowait
    return total / _TICK


_SETTLE = [0.0]  # longest wait for idle CPUs before a timed run, seconds (--settle)
_DELETE_BETWEEN = [False]  # --delete-between: delete each output as soon as it is done
DELETE_NOTE = (
    "Outputs are deleted only when all runs are done (`--delete-between` deletes each "
    "one before the next run, as earlier versions of this script did). The reason is a "
    "property of file systems like this one (ext4 without a journal): when allocating an "
    "inode, the kernel skips, one by one, the inodes freed in the last 60 seconds "
    "(`recently_deleted()` in fs/ext4/ialloc.c), so creating tens of thousands of files "
    "right after deleting tens of thousands of others costs up to ~1 ms of system time per "
    "file instead of a few tens of µs. With deletions between runs, the benchmark measured its own "
    "clean-up more than the render.")


def settle() -> None:
    """Flush dirty pages (earlier runs' output must not be written back during this one),
    then wait (at most --settle seconds) until the pinned CPUs are idle for a second."""
    os.sync()
    deadline = time.monotonic() + _SETTLE[0]
    while time.monotonic() < deadline:
        before = busy_seconds()
        time.sleep(1.0)
        if busy_seconds() - before < 0.1 * len(_CPUS):
            return


def run_once(argv: Sequence[str], log: Path) -> Sample:
    """Run ``argv`` as its own process; wall time, CPU time and peak RSS of that process."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(log), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    settle()
    busy0 = busy_seconds()
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], list(argv), dict(os.environ), file_actions=actions)
    try:
        _pid, status, usage = os.wait4(pid, 0)
    except BaseException:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        raise
    wall = time.perf_counter() - t0
    busy = busy_seconds() - busy0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        out = log.read_text(errors="replace")[-3000:]
        raise BenchError(f"{' '.join(argv)} exited {code}:\n{out}")
    cpu = usage.ru_utime + usage.ru_stime
    # Linux reports ru_maxrss in KiB.
    return Sample(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss * 1024,
                  max(busy - cpu, 0.0) / wall)


def tree_size(root: Path) -> tuple[int, int]:
    files = size = 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            files += 1
            size += (Path(dirpath) / name).stat().st_size
    return files, size


def one_change(text: str) -> str:
    """The inventory with the boot-NIC MAC of its last node replaced (a swapped NIC)."""
    at = text.rfind(" mac: ")
    if at < 0:
        raise BenchError("no 'mac:' in the inventory to change")
    end = text.index("\n", at)
    line = text[at:end]
    new = re.sub(r"mac: *\"?[0-9A-Fa-f:-]{17}\"?", 'mac: "02:fe:ed:00:00:01"', line, count=1)
    if new == line:
        raise BenchError(f"cannot change the MAC in {line.strip()!r}")
    return text[:at] + new + text[end:]


def bench_one(fleet: Path, label: str, inventory: Path, work: Path, runs: int) -> Result:
    log = work / "fleet.log"
    inv = str(inventory)
    # Untimed: check the inventory, learn its size, and warm the page cache and .pyc files.
    probe = subprocess.run([str(fleet), "validate", "--json", "-i", inv], capture_output=True,
                           text=True, check=False)
    if probe.returncode != 0:
        raise BenchError(f"{inventory} is not valid:\n{probe.stdout[-3000:]}{probe.stderr}")
    nodes = int(json.loads(probe.stdout)["summary"]["nodes"])
    stats: dict[str, Stats] = {}

    def render(inventory: str, out: Path) -> Sample:
        return run_once([str(fleet), "render", "-q", "-i", inventory, "-o", str(out)], log)

    def series(case: str, run: Callable[[int], Sample]) -> None:
        samples = []
        for i in range(runs):
            samples.append(run(i))
            progress(label, case, i, samples[-1])
        stats[case] = Stats.of(samples)

    files = output_bytes = 0

    def cold(i: int) -> Sample:
        nonlocal files, output_bytes
        out = work / f"cold-{i}"
        out.mkdir()
        sample = render(inv, out)
        if i == 0:
            files, output_bytes = tree_size(out)
        if _DELETE_BETWEEN[0]:
            shutil.rmtree(out)
        # else kept until the end (see DELETE_NOTE)
        return sample

    series("cold", cold)

    warm = work / "warm"
    warm.mkdir()
    render(inv, warm)
    series("rerender", lambda _i: render(inv, warm))

    # One node changed: alternate between the inventory and a copy with one MAC changed,
    # so every run finds exactly one machine's files out of date.
    changed = work / "changed.yaml"
    changed.write_text(one_change(inventory.read_text(encoding="utf-8")), encoding="utf-8")
    check = subprocess.run([str(fleet), "render", "--check", "--json", "-i", str(changed),
                            "-o", str(warm)], capture_output=True, text=True, check=False)
    diff = json.loads(check.stdout) if check.returncode == 3 else {}
    if not diff.get("changed") or diff.get("added") or diff.get("removed"):
        raise BenchError(f"changing one MAC did not just change files: {check.stdout[:500]}")
    series("onechange", lambda i: render(str(changed) if i % 2 == 0 else inv, warm))
    # The last render must have left the output exactly as rendered.
    last = str(changed) if (runs - 1) % 2 == 0 else inv
    run_once([str(fleet), "render", "--check", "-q", "-i", last, "-o", str(warm)], log)
    if _DELETE_BETWEEN[0]:
        shutil.rmtree(warm)

    series("validate", lambda _i: run_once([str(fleet), "validate", "-q", "-i", inv], log))
    return Result(label, nodes, inventory.stat().st_size, files, output_bytes, stats)


def create_cost(where: Path, count: int = 2000) -> float:
    """Microseconds of one file creation (open O_CREAT + write + close) under ``where``."""
    d = Path(tempfile.mkdtemp(prefix="create-", dir=where))
    try:
        os.sync()
        t0 = time.perf_counter()
        for i in range(count):
            fd = os.open(d / f"f{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, b"x" * 800)
            os.close(fd)
        return (time.perf_counter() - t0) / count * 1e6
    finally:
        shutil.rmtree(d)


def progress(label: str, case: str, i: int, s: Sample) -> None:
    print(f"  {label:>8} {case:<8} run {i + 1}: {s.wall_s:7.2f} s wall, {s.user_s:6.2f} s user, "
          f"{s.sys_s:6.2f} s sys, "
          f"{s.maxrss / MB:7.1f} MB peak RSS, other load {s.other:4.2f} CPUs", file=sys.stderr,
          flush=True)


# --- machine description --------------------------------------------------------------


def fs_type(path: Path) -> str:
    best, kind = "", "unknown"
    target = os.path.realpath(path)
    for line in read_quiet("/proc/mounts").splitlines():
        parts = line.split()
        if len(parts) >= 3:
            mnt = parts[1]
            inside = target == mnt or target.startswith(mnt.rstrip("/") + "/")
            if inside and len(mnt) > len(best):
                best, kind = mnt, parts[2]
    return kind


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def libyaml() -> str:
    try:
        import yaml
    except ImportError:
        return "no"
    return "yes" if hasattr(yaml, "CSafeLoader") else "no"


def git_commit() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                "tools"], cwd=ROOT, check=True, capture_output=True,
                               text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{rev} (tools/ modified)" if dirty else rev


def loadavg() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def machine(work: Path, cpus: set[int], commit: str, load_before: str,
            load_after: str, create_us: float) -> list[str]:
    total = os.cpu_count() or 0
    return [
        f"- CPU: {cpu_model()}; {total} logical CPUs online (`nproc`), runs pinned to "
        f"{len(cpus)} ({', '.join(map(str, sorted(cpus)))})",
        f"- memory: {mem_total()}",
        f"- OS: {os_name()}",
        f"- Python {platform.python_version()}; pydantic {version('pydantic')}, "
        f"PyYAML {version('PyYAML')} (libyaml: {libyaml()}), Jinja2 {version('Jinja2')}",
        f"- fleet at commit {commit}; output written to {fs_type(work)} ({work.parent}), "
        f"where creating one small file takes {create_us:,.0f} µs",
        f"- load average (1/5/15 min) before the runs: {load_before}; after: {load_after} "
        "(other work on the machine inflates wall and CPU times alike)",
        f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
    ]


# --- report ----------------------------------------------------------------------------


def ratios(results: list[Result]) -> dict[str, float] | None:
    by = {r.label: r for r in results}
    if "1000" not in by or "10000" not in by:
        return None
    return {c: by["10000"].stats[c].wall_median / by["1000"].stats[c].wall_median
            for c in CASES}


def targets(results: list[Result]) -> list[Target]:
    by = {r.label: r for r in results}
    out = []
    if "default" in by:
        d = by["default"]
        for case in RENDERS:
            s = d.stats[case].wall_median
            limit = COLD_LIMIT_S if case == "cold" else DEFAULT_LIMIT_S
            out.append(Target(f"site inventory ({d.nodes} nodes), `fleet render` "
                              f"({CASE_TEXT[case]}) <= {limit:g} s", f"{s:.2f} s", s,
                              limit + 1e-9))
    if "10000" in by:
        b = by["10000"]
        for case in RENDERS:
            s = b.stats[case].wall_median
            limit = EDIT_LIMIT_S if case == "onechange" else BIG_LIMIT_S
            out.append(Target(f"10,000 nodes, `fleet render` ({CASE_TEXT[case]}) "
                              f"<= {limit:g} s", f"{s:.2f} s", s, limit + 1e-9))
        rss = max(st.rss_max for st in b.stats.values())
        out.append(Target(f"10,000 nodes, peak RSS < {BIG_RSS_LIMIT / 1e9:g} GB (worst run, "
                          "any case)", f"{rss / MB:,.0f} MB", rss, BIG_RSS_LIMIT))
    r = ratios(results)
    if r is not None:
        for case in CASES:
            out.append(Target(f"10k/1k wall-time ratio ({CASE_TEXT[case]}) <= {RATIO_LIMIT:g}",
                              f"{r[case]:.1f}", r[case], RATIO_LIMIT + 1e-9))
    return out


def results_table(results: list[Result]) -> list[str]:
    lines = [
        "| inventory | nodes | case | wall median (s) | wall min–max (s) | user / sys median (s) "
        "| peak RSS median (MB) | peak RSS max (MB) | other load (CPUs) |",
        "|---|--:|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        for case in CASES:
            s = r.stats[case]
            lines.append(
                f"| {r.label} | {r.nodes:,} | {CASE_TEXT[case]} | {s.wall_median:.2f} "
                f"| {s.wall_min:.2f}–{s.wall_max:.2f} | {s.user_median:.2f} / {s.sys_median:.2f} "
                f"| {s.rss_median / MB:,.0f} | {s.rss_max / MB:,.0f} | {s.other_median:.2f} |")
    return lines


def side_by_side(results: list[Result]) -> list[str]:
    """Medians per inventory size, one row each: the full render next to the edit, wall
    time and CPU time (user + sys: what other load inflates least)."""
    lines = ["| inventory | nodes | files | render, empty dir (s) | nothing changed (s) "
             "| one node changed (s) | validate only (s) |", "|---|--:|--:|--:|--:|--:|--:|"]
    for r in sorted(results, key=lambda r: r.nodes):
        cells = " | ".join(f"{r.stats[c].wall_median:.2f} / {r.stats[c].cpu_median:.2f}"
                           for c in CASES)
        lines.append(f"| {r.label} | {r.nodes:,} | {r.files:,} | {cells} |")
    return lines


COBBLER_NOTE = (
    "**Cobbler.** The peer a user would pick instead is Cobbler (3.3.10): its `cobbler sync` "
    "writes the DHCP, DNS and PXE files of every system, as `fleet render` does. No test or "
    "make target depends on it; to compare on the same machine, install it "
    "(`pip install cobbler==3.3.10` in a scratch virtual environment, or the distribution's "
    "package, with its `cobblerd` running), add the same systems (one "
    "`cobbler system add --name H --profile P --mac M --ip-address A --hostname H` per node "
    "of the inventory: the line after the comment in each `pxe/dnsmasq/hosts/<H>` that "
    "`fleet render` wrote is `M,A,H,infinite`), then time "
    "`cobbler sync` (full) and, after `cobbler system edit --name H --mac M2` of one node, "
    "`cobbler sync --systems=H` (its one-node edit), each a median of the same number of runs "
    "as above, pinned to the same CPUs (`taskset -c 0,1`).")


def section(results: list[Result], runs: int, mach: list[str]) -> str:
    lines = [
        SECTION,
        "",
        "<!-- Written by benchmarks/bench_render.py (`make bench-render`); rerun it rather "
        "than editing this section. -->",
        "",
        "Whole-process timings of the `fleet` command line: every run is a fresh "
        "`fleet ... -q` process, timed from spawn to exit, so interpreter start-up, imports, "
        "YAML parsing, validation, rendering and writing are all included. Peak RSS is the "
        "`ru_maxrss` of that one process (from `wait4`). Before each run, dirty pages are "
        "flushed (`sync`) and the script waits briefly for idle CPUs. Each figure is the "
        f"median of {runs} runs, with the range.",
        "",
        "- *render, empty output dir*: `fleet render -i INV -o DIR -q` into an empty DIR;",
        "- *render, nothing changed*: the same again over its own output (idempotent, writes "
        "nothing);",
        "- *render, one node changed*: over its own output, after the boot-NIC MAC of one "
        "node changed (alternating between two inventories), so that node's files change;",
        "- *validate only*: `fleet validate -i INV -q`.",
        "",
        DELETE_NOTE if not _DELETE_BETWEEN[0] else
        "Each run's output was deleted before the next run (`--delete-between`).",
        "",
        "*Other load* is the CPU time other processes used on the same CPUs during the runs "
        "(from `/proc/stat`), in CPUs (median); well above 0 means the figures are "
        "inflated by contention (on a 2-CPU machine, even the CPU times are).",
        "",
        "Inventories: *default* is the site's `inventory.yaml`; the others come from "
        "`benchmarks/gen_inventory.py --nodes N` (seed 1): the site's mix of GPU and storage "
        "nodes, 38 GPU nodes per partition and 40-port InfiniBand switch, /16 BMC and "
        "provisioning networks.",
        "",
        "### Machine",
        "",
        *mach,
        "",
        "### Reproduce",
        "",
        "```sh",
        "make bench-render",
        "# or: .venv/bin/python benchmarks/bench_render.py --runs 7 --write docs/benchmarks.md",
        "```",
        "",
        COBBLER_NOTE,
        "",
        "### Results",
        "",
        "Medians side by side, wall / CPU (user + sys) seconds; the one-node edit is the "
        "incremental render (`.render.inputs` beside the output, `fleet.render.incremental`):",
        "",
        *side_by_side(results),
        "",
        "All figures:",
        "",
        *results_table(results),
        "",
        "| inventory | nodes | inventory size | files rendered | output size |",
        "|---|--:|--:|--:|--:|",
        *[f"| {r.label} | {r.nodes:,} | {r.inventory_bytes / MB:.2f} MB | {r.files:,} "
          f"| {r.output_bytes / MB:.1f} MB |" for r in results],
        "",
    ]
    r = ratios(results)
    if r is not None:
        lines += ["### Scaling, 10,000 / 1,000 nodes", "",
                  "| case | 1,000 nodes (s) | 10,000 nodes (s) | ratio |", "|---|--:|--:|--:|"]
        by = {x.label: x for x in results}
        for case in CASES:
            lines.append(f"| {CASE_TEXT[case]} | {by['1000'].stats[case].wall_median:.2f} "
                         f"| {by['10000'].stats[case].wall_median:.2f} | {r[case]:.1f} |")
        lines.append("")
    ts = targets(results)
    if ts:
        lines += ["### Targets", "",
                  f"Wall times are medians. \"close\" means above {CLOSE:.0%} of the limit.",
                  "", "| target | measured | status |", "|---|--:|---|"]
        lines += [f"| {t.text} | {t.measured} | {t.status} |" for t in ts]
        lines.append("")
    return "\n".join(lines)


# --- main ------------------------------------------------------------------------------


def find_fleet(given: Path | None) -> Path:
    if given is not None:
        return given
    beside = Path(sys.executable).with_name("fleet")
    if beside.exists():
        return beside
    found = shutil.which("fleet")
    if found is None:
        raise BenchError("cannot find the fleet command; pass --fleet")
    return Path(found)


def pin(count: int) -> set[int]:
    """Restrict this process (and so every fleet run) to ``count`` CPUs; 0 = all."""
    cpus = os.sched_getaffinity(0)
    if count > 0 and len(cpus) > count:
        cpus = set(sorted(cpus)[:count])
        os.sched_setaffinity(0, cpus)
    _CPUS.clear()
    _CPUS.update(cpus)
    return cpus


def _interrupted(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # clean up the child and the temp dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per case (default 7)")
    parser.add_argument("--sizes", nargs="+", default=["default", "75", "500", "2000", "10000"],
                        metavar="SIZE", help="'default' (inventory.yaml), a node count, or an "
                        "inventory file (default: default 75 500 2000 10000)")
    parser.add_argument("--write", type=Path, metavar="FILE",
                        help="write the results into the '## Render' section of FILE")
    parser.add_argument("--cpus", type=int, default=2,
                        help="pin the runs to this many CPUs, as in the targets (default 2; "
                        "0 = all)")
    parser.add_argument("--settle", type=float, default=10.0, metavar="SECONDS",
                        help="before each timed run, wait up to this long for the CPUs to be "
                        "idle (default 10; 0 = never wait)")
    parser.add_argument("--seed", type=int, default=1, help="seed of generated inventories")
    parser.add_argument("--fleet", type=Path, help="fleet executable (default: beside python)")
    parser.add_argument("--tmpdir", type=Path, default=DEFAULT_TMPDIR,
                        help="where to write inventories and output (default: benchmarks/out, "
                        "on the checkout's file system, as `make render`)")
    parser.add_argument("--delete-between", action="store_true",
                        help="delete each run's output before the next run (default: keep "
                        "all until the end; see the note in the report)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    _SETTLE[0] = args.settle
    _DELETE_BETWEEN[0] = args.delete_between
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        fleet = find_fleet(args.fleet)
        cpus = pin(args.cpus)
        results = []
        args.tmpdir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="fleet-bench-", dir=args.tmpdir) as tmp:
            work = Path(tmp)
            load_before, commit = loadavg(), git_commit()
            for size in args.sizes:
                case_dir = work / size.replace("/", "_")
                case_dir.mkdir()
                if size == "default":
                    inventory = DEFAULT_INVENTORY
                elif size.isdigit():
                    inventory = write_inventory(case_dir / "inventory.yaml", int(size),
                                                args.seed)
                else:
                    inventory = Path(size)
                print(f"{size}: {inventory}", file=sys.stderr, flush=True)
                results.append(bench_one(fleet, size, inventory.resolve(), case_dir, args.runs))
                if _DELETE_BETWEEN[0]:
                    shutil.rmtree(case_dir)
            create_us = create_cost(work)
            mach = machine(work, cpus, commit, load_before, loadavg(), create_us)
    except (BenchError, ValueError, OSError) as exc:
        print(f"bench_render: {exc}", file=sys.stderr)
        return 1
    text = section(results, args.runs, mach)
    print(text)
    if args.write is not None:
        replace_section(args.write, SECTION, text)
        print(f"wrote the render section of {args.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
