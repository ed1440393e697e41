#!/usr/bin/python3
"""Managed by Salt (monitoring.slurm). Slurm metrics for node_exporter's textfile
collector, from the controller's own sinfo, squeue and sdiag.

  fleet-slurm-metrics --out DIR/fleet-slurm.prom [--bin DIR]

sinfo failing (slurmctld down) is a result: fleet_slurm_up 0 and nothing else, so the
monitoring host's SlurmControllerDown fires.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet_textfile import Metrics, write_atomic  # noqa: E402

# one line per node and partition: name, partition, long state, reason time, reason
SINFO = ["sinfo", "--noheader", "--Node", "--format=%N|%R|%T|%H|%E"]
SQUEUE = ["squeue", "--noheader", "--all", "--format=%P|%T"]
SDIAG = ["sdiag"]
JOB_STATES = ("PENDING", "RUNNING")
# sdiag: "Main schedule statistics (microseconds):" then "\tLast cycle:   123"
SECTIONS = {"Main schedule statistics": "main", "Backfilling stats": "backfill"}
CYCLE = re.compile(r"^\s*(Last|Max|Mean) cycle:\s+(\d+)\s*$")
GAUGES = {"Server thread count": "fleet_slurm_server_threads",
          "Agent queue size": "fleet_slurm_agent_queue_size"}


def base_state(state: str) -> str:
    """sinfo's long state without its flags: drained* -> drained, idle~ -> idle,
    idle+drain -> drained (a drain flag on an idle node is a drained node)."""
    state = state.strip().lower()
    word = re.match(r"[a-z]+", state)
    base = word[0] if word else "unknown"
    if "+drain" in state:
        return "draining" if base in ("mixed", "allocated", "completing") else "drained"
    return base


def _timestamp(text: str) -> float | None:
    text = text.strip()
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    try:
        return datetime.fromisoformat(text).timestamp()  # sinfo prints local time
    except ValueError:
        return None


def parse_sinfo(output: str) -> tuple[dict[tuple[str, str], int], dict[str, tuple[float, str]]]:
    """Nodes by (partition, state), and each drained node's reason time and reason."""
    counts: dict[tuple[str, str], int] = {}
    drained: dict[str, tuple[float, str]] = {}
    for line in output.splitlines():
        if not line.strip():
            continue
        parts = line.split("|", 4)
        if len(parts) != 5:
            raise ValueError(f"sinfo line is not NODE|PARTITION|STATE|TIME|REASON: {line!r}")
        node, partition, state, since, reason = parts
        partition = partition.rstrip("*")
        st = base_state(state)
        counts[(partition, st)] = counts.get((partition, st), 0) + 1
        when = _timestamp(since)
        if st in ("drained", "draining") and when is not None:
            drained[node] = (when, reason.strip())
    return counts, drained


def parse_squeue(output: str) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for line in output.splitlines():
        if "|" not in line:
            continue
        partition, state = (p.strip() for p in line.split("|", 1))
        counts[(partition, state)] = counts.get((partition, state), 0) + 1
    return counts


def parse_sdiag(output: str) -> tuple[dict[tuple[str, str], float], dict[str, float]]:
    """Scheduler cycle times in seconds by (scheduler, last|max|mean), and gauges."""
    cycles: dict[tuple[str, str], float] = {}
    gauges: dict[str, float] = {}
    section = ""
    for line in output.splitlines():
        for title, name in SECTIONS.items():
            if line.startswith(title):
                section = name
        m = CYCLE.match(line)
        if m and section:
            cycles[(section, m[1].lower())] = int(m[2]) / 1e6
        key, _, value = line.partition(":")
        if key.strip() in GAUGES and value.strip().isdigit():
            gauges[GAUGES[key.strip()]] = float(value.strip())
    return cycles, gauges


def collect(sinfo: str | None, squeue: str | None, sdiag: str | None) -> Metrics:
    m = Metrics()
    m.declare("fleet_slurm_up", "gauge", "1 if sinfo reached slurmctld.")
    m.add("fleet_slurm_up", 1 if sinfo is not None else 0)
    if sinfo is None:
        return m
    counts, drained = parse_sinfo(sinfo)
    partitions = sorted({p for p, _ in counts})
    m.declare("fleet_slurm_nodes", "gauge", "Nodes by partition and state (sinfo).")
    for (partition, state), n in sorted(counts.items()):
        m.add("fleet_slurm_nodes", n, partition=partition, state=state)
    m.declare("fleet_slurm_node_drained_since_seconds", "gauge",
              "When a drained node's reason was set (Unix time).")
    for node, (when, reason) in sorted(drained.items()):
        m.add("fleet_slurm_node_drained_since_seconds", when, slurm_node=node,
              reason=reason[:120])
    if squeue is not None:
        jobs = parse_squeue(squeue)
        m.declare("fleet_slurm_jobs", "gauge", "Jobs by partition and state (squeue).")
        for partition in sorted(set(partitions) | {p for p, _ in jobs}):
            for state in JOB_STATES:
                m.add("fleet_slurm_jobs", jobs.get((partition, state), 0),
                      partition=partition, state=state)
    if sdiag is not None:
        cycles, gauges = parse_sdiag(sdiag)
        m.declare("fleet_slurm_scheduler_cycle_seconds", "gauge",
                  "Scheduler cycle time (sdiag): last, max, mean.")
        for (scheduler, stat), seconds in sorted(cycles.items()):
            m.add("fleet_slurm_scheduler_cycle_seconds", seconds, scheduler=scheduler, stat=stat)
        for name, value in sorted(gauges.items()):
            m.declare(name, "gauge", f"sdiag: {name.removeprefix('fleet_slurm_')}.")
            m.add(name, value)
    return m


def _run(argv: list[str], timeout: float) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the .prom file in the textfile directory")
    ap.add_argument("--bin", default="/usr/bin", help="where sinfo, squeue and sdiag are")
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args(argv)

    def run(cmd: list[str]) -> str | None:
        return _run([os.path.join(args.bin, cmd[0]), *cmd[1:]], args.timeout)

    sinfo = run(SINFO)
    up = sinfo is not None
    try:
        metrics = collect(sinfo, run(SQUEUE) if up else None, run(SDIAG) if up else None)
    except ValueError as exc:
        print(f"fleet-slurm-metrics: {exc}", file=sys.stderr)
        return 1
    write_atomic(args.out, metrics.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
