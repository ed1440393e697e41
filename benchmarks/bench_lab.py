"""Timings of the lab (`make bench-lab`): image build, bring-up, first highstate and the
idempotent re-apply per node and role, master and minion memory.

Each run starts from `fleet lab down` (which keeps the cached image) and does what
`make lab` does (`fleet lab up`: image check, render, network, containers, master,
minions answering, highstate, minions answering again), then applies the highstate a
second time and reads the memory of the master (with its workers) and of each minion.
``--cold`` first measures one image build from nothing (`fleet lab down --all`: no
image, no wheelhouse). Medians of ``--runs`` runs, with min and max. Per node, "state
time" is the sum of the durations Salt reports for that node's states (what the node
spent applying); the wall times are those of the whole lab (all nodes in parallel on
this host's cores).

    .venv/bin/python benchmarks/bench_lab.py --runs 3 --cold --write docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report
from fleet.lab import highstate, image, master, nodes
from fleet.lab import lab as lab_mod
from fleet.lab.paths import Paths
from fleet.lab.plan import LabNode
from fleet.lab.plan import load as load_plan

SECTION = "## Lab"
LIMIT_UP_S = 600.0  # make lab from a cached image to a converged lab
LIMIT_REAPPLY = 0.10  # idempotent re-apply / first apply


def role_of(node: LabNode) -> str:
    if "provisioning" in node.roles:
        return "head"
    if "nvidia" in node.roles:
        return "gpu"
    if "mkv.volume" in node.roles:
        return "storage"
    return "other"


Run = dict[str, float]


def one_run(paths: Paths) -> tuple[Run, dict[str, Run]]:
    lab_mod.down(paths)
    timings, first = lab_mod.up(paths)
    if any(r.failed for r in first):
        raise SystemExit("bench-lab: the first highstate failed:\n"
                         + highstate.format_results(first, timings.steps["highstate"]))
    plan = load_plan(paths)
    second, second_wall = highstate.apply(paths, [n.hostname for n in plan.nodes])
    changed = sum(r.changed + r.failed for r in second)
    if changed:
        raise SystemExit("bench-lab: the re-apply was not idempotent:\n"
                         + highstate.format_results(second, second_wall))
    steps = dict(timings.steps)
    steps["re-apply (wall)"] = second_wall
    steps["master RSS MB"] = master.rss_mb(paths)
    per_node: dict[str, Run] = {}
    f = {r.minion: r for r in first}
    s = {r.minion: r for r in second}
    for node in plan.nodes:
        per_node[node.hostname] = {
            "first": f[node.hostname].seconds,
            "second": s[node.hostname].seconds,
            "states": float(f[node.hostname].ok + f[node.hostname].changed),
            "minion RSS MB": nodes.rss_mb(paths, node),
        }
    return steps, per_node


def med(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}"


def spread(values: list[float]) -> str:
    return f"{min(values):.1f}-{max(values):.1f}"


def build_text(runs: list[tuple[Run, dict[str, Run]]], cold_s: float | None,
               plan_nodes: list[LabNode], load_before: str) -> str:
    step_names = [k for k in runs[0][0] if k != "master RSS MB"]
    lines = [SECTION, "",
             "<!-- Written by benchmarks/bench_lab.py (`make bench-lab`); rerun it rather "
             "than editing this section. -->", "",
             f"{len(runs)} runs of `fleet lab down` (image kept) then `fleet lab up` (what "
             "`make lab` does) and a second `state.apply`; medians with min-max. Per node, "
             "*state time* is the sum of the state durations Salt reports for the node; "
             "wall times are the whole lab's, every node applying at once on this host's "
             "2 cores.", "",
             "### Machine", "",
             f"- CPU: {report.cpu_model()}, 2 logical CPUs; memory {report.mem_total()}",
             f"- OS: {report.os_name()}; podman with runc, systemd containers",
             f"- lab minions: {Paths.find().os} (LAB_OS)",
             f"- fleet at commit {report.commit()}",
             f"- load average before: {load_before}; after: {report.load_average()} "
             "(other work on the machine inflates these figures)",
             f"- date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC", "",
             "### Reproduce", "", "```sh", "make bench-lab",
             "# or: .venv/bin/python benchmarks/bench_lab.py --runs 3 --cold "
             "--write docs/benchmarks.md", "```", "",
             "### Steps", "", "| step | median s | min-max s |", "|---|--:|--:|"]
    if cold_s is not None:
        lines.append(f"| image build, cold (no image, no wheelhouse; 1 run) | {cold_s:.1f} | |")
    for k in step_names:
        values = [r[0][k] for r in runs if k in r[0]]
        lines.append(f"| {k} | {med(values)} | {spread(values)} |")
    lines += ["", "### Per node: first apply and idempotent re-apply", "",
              "| node | role | states | first apply, state time s | re-apply, state time s "
              "| re-apply / first | minion RSS MB |", "|---|---|--:|--:|--:|--:|--:|"]
    ratios: list[float] = []
    for node in plan_nodes:
        per = [r[1][node.hostname] for r in runs]
        first = statistics.median(p["first"] for p in per)
        second = statistics.median(p["second"] for p in per)
        ratios.append(second / first)
        lines.append(f"| {node.hostname} | {role_of(node)} | {med([p['states'] for p in per])} "
                     f"| {first:.1f} | {second:.1f} | {second / first:.1%} "
                     f"| {med([p['minion RSS MB'] for p in per])} |")
    master_mb = [r[0]["master RSS MB"] for r in runs]
    lines += ["", f"Master (salt-master and its workers) RSS: {med(master_mb)} MB "
              f"(min-max {spread(master_mb)}).", ""]
    up = statistics.median(r[0]["total"] for r in runs)
    wall_ratio = statistics.median(r[0]["re-apply (wall)"] / r[0]["highstate"] for r in runs)
    lines += ["### Targets", "", "| target | measured | status |", "|---|--:|---|",
              f"| `make lab` from a cached image < {LIMIT_UP_S / 60:.0f} min | {up / 60:.1f} min "
              f"| {'met' if up < LIMIT_UP_S else 'NOT met'} |",
              f"| idempotent re-apply < {LIMIT_REAPPLY:.0%} of first apply, per node (worst) "
              f"| {max(ratios):.1%} | {'met' if max(ratios) < LIMIT_REAPPLY else 'NOT met'} |",
              f"| the same, whole lab wall time | {wall_ratio:.1%} "
              f"| {'met' if wall_ratio < LIMIT_REAPPLY else 'NOT met'} |", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="bring-ups to time (default 3)")
    parser.add_argument("--cold", action="store_true",
                        help="first time one image build from nothing (removes the image)")
    parser.add_argument("--keep", action="store_true", help="leave the last lab up")
    parser.add_argument("--write", type=Path, metavar="FILE",
                        help="write the results into the '## Lab' section of FILE")
    args = parser.parse_args()
    paths = Paths(report.ROOT)
    load_before = report.load_average()
    cold_s = None
    if args.cold:
        lab_mod.down(paths, everything=True)
        t0 = time.monotonic()
        image.build(paths)
        cold_s = time.monotonic() - t0
        print(f"[bench-lab] cold image build: {cold_s:.1f}s", file=sys.stderr, flush=True)
    runs = []
    for i in range(args.runs):
        print(f"[bench-lab] run {i + 1}/{args.runs}", file=sys.stderr, flush=True)
        runs.append(one_run(paths))
        print(f"[bench-lab] run {i + 1}: " + ", ".join(f"{k} {v:.1f}"
                                                         for k, v in runs[-1][0].items()),
              file=sys.stderr, flush=True)
    if not args.keep:
        lab_mod.down(paths)
    text = build_text(runs, cold_s, load_plan(paths).nodes, load_before)
    print(text)
    if args.write is not None:
        report.replace_section(args.write, SECTION, text)
        print(f"wrote the lab section of {args.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
