"""``make bench-status``: ``fleet status`` of a whole site, every source live: one
salt-master as the site renders it with one real salt-minion per node (fleet.apply.swarm,
as bench-fanout), FAKE Redfish BMCs (sushy-tools' emulator, tests/support/bmcfakes.py;
``--bmcs`` processes, the nodes spread over them), a STAND-IN for ``scontrol`` (the
lines Slurm 22.05 prints, one per compute node: no slurmctld runs here), the PXE links,
a kept ``fleet apply`` result per node.

Per size (``--sizes``, node counts spread over the site's inventory; default the site's
144), ``--runs`` runs of the real ``fleet status --live --json`` (a separate process):
its wall time, each source's seconds (from its JSON), the master's CPU seconds, and how
many nodes came out ok; ``--ping-runs`` runs of ``--live --ping`` (a test.ping job
through every minion); then the collector once (``fleet status --collect --once``, the
same sources, minion presence from ``salt-run manage.alived``) and ``--runs`` runs of
``fleet status --json`` reading its cache.

The setup (``--minion-nice``, ``--bmc-nice``, ``--minion-cpus``, ``--master-cpus``,
``--minion-processes``), stated in the report: on a site each minion and each BMC has a
machine of its own; here the 144 minions, the BMC emulators and the master share this
host's CPUs. An idle Salt 3008 minion costs some 5 ms of CPU a second, 144 of them most of
a CPU, and each ``test.ping`` costs a minion 0.1-0.15 CPU seconds (it loads its modules
again for every job). So, once every minion has signed in, the minions run niced and
pinned to their own CPUs, the master and the CLI pinned to the others, so that their load
does not starve the master whose work is measured; the fake BMCs (other machines too) run
on any CPU at a nice value between the master's and the minions' (else 144 idle minions
starve 8 emulators, and the emulators' 20-30 ms of CPU per request, 144 of them one after
another on one CPU, would be the power column); and the
swarm's own minion file (not the site's) runs jobs as threads (``multiprocessing:
False``: a fork per job is paid one minion after another here, side by side on a site)
and turns off the failover minion's ``master_alive_interval`` check (a read of
/proc/net/tcp every 30 s, here a table of every minion's connections).

``--read-only``: no swarm: the collector's read path alone, the cache of the site's
nodes written by the collector's own code (fleet.status.collector, values in
fleet.status.codec's shape, every node on, local, accepted, connected, idle), read by
the real ``fleet status --json``. Results -> the ``## fleet status`` section of
docs/benchmarks.md (``--write``) and JSON (``--json``)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))  # support.*, health.fakesite

import report  # noqa: E402
from fleet import lastrun  # noqa: E402
from fleet.inventory.load import load_inventory  # noqa: E402
from health.fakesite import scontrol_line  # noqa: E402
from support import swarmconf  # noqa: E402
from support.bmcfakes import PASSWORD, FakeBmcProcess, start_fake_redfish  # noqa: E402
from support.swarm import Swarm, cpu_ticks, pin  # noqa: E402

HEADING = "## fleet status"
READ_HEADING = "## fleet status from the collector"
TICK = os.sysconf("SC_CLK_TCK")
KEYS = Path("/var/tmp/fleet-swarm-keys")
INVENTORY = ROOT / "inventory.yaml"


def wait_pings(sw: Swarm, timeout: float, log: Any) -> float:
    """Seconds until every minion answers one ``salt test.ping``."""
    t0 = time.monotonic()
    from fleet.master.runner import Result
    from fleet.master.salt import json_dict

    while time.monotonic() - t0 < timeout:
        out = subprocess.run([str(ROOT / ".venv/bin/salt"), "-c", str(sw.config_dir), "-L",
                              ",".join(sw.ids), "test.ping", "-t10", "--out=json"],
                             capture_output=True, text=True, check=False)
        got = json_dict(Result((), out.returncode, out.stdout, out.stderr))
        up = sum(1 for i in sw.ids if got.get(i) is True)
        log(f"  {up}/{len(sw.ids)} minions answer")
        if up == len(sw.ids):
            return time.monotonic() - t0
        time.sleep(2)
    raise RuntimeError(f"not every minion answered within {timeout:.0f}s")


def start_bmcs(ids: list[str], count: int, work: Path) -> tuple[list[FakeBmcProcess], str,
                                                                   Path]:
    """``count`` fake BMCs per BMC user the nodes' profiles have (at least one each), every
    node given one (--bmc-address NODE=HOST:PORT,...), and the secrets store."""
    inv = load_inventory(INVENTORY)
    secrets = work / "secrets" / "bmc"
    secrets.mkdir(parents=True, mode=0o700)
    by_user: dict[str, list[str]] = {}
    for n in ids:
        spec = inv.nodes[n].profile.bmc
        by_user.setdefault(spec.user, []).append(n)
        secret = secrets / spec.password_secret
        secret.write_text(PASSWORD + "\n")
        secret.chmod(0o600)
    fakes: list[FakeBmcProcess] = []
    pairs = []
    for user, nodes in by_user.items():
        mine = []
        for k in range(max(1, min(count, len(nodes)))):
            d = work / f"bmc-{user}-{k}"
            d.mkdir()
            mine.append(start_fake_redfish(d, power="On", system=f"{user}-{k}", user=user))
        fakes += mine
        pairs += [f"{n}=127.0.0.1:{mine[i % len(mine)].port}" for i, n in enumerate(nodes)]
    return fakes, ",".join(pairs), secrets.parent


def slurm_standin(ids: list[str], work: Path) -> Path:
    inv = load_inventory(INVENTORY)
    lines = work / "scontrol.txt"
    lines.write_text("\n".join(scontrol_line(n) for n in ids
                               if inv.nodes[n].has("slurm.compute")) + "\n")
    script = work / "slurm-standin"  # STAND-IN for a Slurm client: scontrol show node -o
    script.write_text(f"#!/bin/sh\n[ \"$1 $2 $3 $4\" = 'scontrol show node -o' ] || exit 2\n"
                      f"cat {lines}\n")
    script.chmod(0o755)
    return script


def minion_opts(args: argparse.Namespace) -> dict[str, object]:
    """The swarm's own minion file over the site's (stated in the report): jobs as threads
    (a fork per job, on one host, is paid one minion after another), and no
    ``master_alive_interval`` check (the site's failover minion reads /proc/net/tcp every 30
    s, here a table of every minion's connections, 144 times over)."""
    opts: dict[str, object] = {"master_alive_interval": 0}
    if not args.minion_processes:
        opts["multiprocessing"] = False
    return opts


def one_size(conf: swarmconf.SiteConfigs, n: int, work: Path, args: argparse.Namespace,
             log: Any) -> dict[str, Any]:
    ids = swarmconf.spread(conf.ids, n)
    sw = Swarm(root=work / "s", ids=ids, master_conf=conf.master_conf,
               minion_conf=conf.minion_conf, bin_dir=ROOT / ".venv" / "bin", key_store=KEYS,
               minion_opts=minion_opts(args))
    sw.write()
    out: dict[str, Any] = {"n": len(ids), "runs": [], "ping_runs": []}
    fakes: list[FakeBmcProcess] = []
    with sw:
        sw.start_master()
        sw.start_minions()
        out["ready_s"] = wait_pings(sw, args.ready_timeout, log)
        fakes, addresses, secrets = start_bmcs(ids, args.bmcs, work)
        # niced and pinned once all have signed in (a hundred minions starting on one CPU,
        # or niced on a busy host, outlast their auth_timeout); the fake BMCs are other
        # machines, as the minions
        for pid in [p.pid for p in sw.minions.values()]:
            pin(pid, args.minion_cpus, args.minion_nice)
        for pid in [f.proc.pid for f in fakes]:
            pin(pid, args.bmc_cpus or None, args.bmc_nice)
        for pid in sw.master_pids() if args.master_cpus else []:
            pin(pid, args.master_cpus)
        out["bmcs"] = len(fakes)
        try:
            for d in ("pxe", "apply", "health", "reinstall", "rollout"):
                (work / d).mkdir()
            lastrun.record(work / "apply", "apply", [(i, "ok", True, "") for i in ids])
            cli = ["taskset", "-c", args.master_cpus] if args.master_cpus else []
            argv = [*cli, sys.executable, "-m", "fleet", "status", ",".join(ids), "--json",
                    "--status-state-dir", str(work / "status"),
                    "-i", str(INVENTORY), "--salt-config", str(sw.config_dir),
                    "--slurm-command", str(slurm_standin(ids, work)),
                    "--pxe-state", str(work / "pxe"), "--apply-state-dir", str(work / "apply"),
                    "--health-state-dir", str(work / "health"),
                    "--reinstall-state-dir", str(work / "reinstall"),
                    "--rollout-state-dir", str(work / "rollout"), "--no-alerts",
                    "--secrets", str(secrets), "--bmc-scheme", "http",
                    "--bmc-address", addresses]
            env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
            def live(extra: list[str], label: str) -> dict[str, Any]:
                # a minion's forked jobs count once reaped (their parent's cutime)
                nodes = [p.pid for p in sw.minions.values()] + [f.proc.pid for f in fakes]
                cpu0, nodes0 = cpu_ticks(sw.master_pids()), cpu_ticks(nodes)
                t0 = time.monotonic()
                proc = subprocess.run([*argv, "--live", *extra], capture_output=True,
                                      text=True, env=env, check=False, timeout=600)
                wall = time.monotonic() - t0
                doc = json.loads(proc.stdout)
                run = {"rc": proc.returncode, "wall_s": round(wall, 2),
                       "master_cpu_s": (cpu_ticks(sw.master_pids()) - cpu0) / TICK,
                       "nodes_cpu_s": (cpu_ticks(nodes) - nodes0) / TICK,
                       "counts": doc["counts"],
                       "sources_s": {k: v["seconds"] for k, v in doc["sources"].items()
                                     if v["skipped"] is None},
                       "errors": {k: v["error"] for k, v in doc["sources"].items()
                                  if v["error"]}}
                log(f"  {label}: rc {proc.returncode}, {wall:.1f}s, {doc['counts']}, "
                    f"sources {run['sources_s']}, master CPU {run['master_cpu_s']:.1f}s, "
                    f"minions' and BMCs' CPU {run['nodes_cpu_s']:.1f}s")
                return run

            out["runs"] = [live([], f"--live run {i + 1}") for i in range(args.runs)]
            out["ping_runs"] = [live(["--ping"], f"--live --ping run {i + 1}")
                                for i in range(args.ping_runs)]
            t0 = time.monotonic()
            proc = subprocess.run([*argv, "--collect", "--once"], capture_output=True,
                                  text=True, env=env, check=False, timeout=600)
            out["collect_s"] = round(time.monotonic() - t0, 2)
            log(f"  collector once: rc {proc.returncode}, {out['collect_s']}s {proc.stdout}")
            out["cached"] = read_runs(argv, env, args.runs, log)
        finally:
            for f in fakes:
                f.stop()
    return out


def read_runs(argv: list[str], env: dict[str, str], runs: int, log: Any
              ) -> list[dict[str, Any]]:
    """``runs`` runs of ``fleet status --json`` from the collector's cache."""
    out = []
    for i in range(runs):
        t0 = time.monotonic()
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False,
                              timeout=600)
        wall = time.monotonic() - t0
        doc = json.loads(proc.stdout)
        ages = {k: v["age_s"] for k, v in doc["sources"].items() if v.get("age_s") is not None}
        out.append({"rc": proc.returncode, "wall_s": round(wall, 3), "counts": doc["counts"],
                    "ages_s": ages,
                    "errors": {k: v["error"] for k, v in doc["sources"].items() if v["error"]}})
        log(f"  from the collector {i + 1}: rc {proc.returncode}, {wall:.2f}s, "
            f"{doc['counts']}, errors {out[-1]['errors']}")
    return out


def read_only(args: argparse.Namespace, work: Path, log: Any) -> dict[str, Any]:
    """The collector's read path alone: the site's nodes' cache, read ``--runs`` times."""
    from fleet.inventory.lifecycle import default_target
    from fleet.status import codec
    from fleet.status.collector import Collector, Source
    from fleet.status.service import CACHE_NAME, INTERVALS
    from fleet.status.sources import Power, Presence, Slurm

    inv = load_inventory(INVENTORY)
    ids = default_target(inv, "status")[0]
    typed: dict[str, dict[str, Any]] = {
        "power": {n: Power("on") for n in ids}, "boot": dict.fromkeys(ids, "local"),
        "key": dict.fromkeys(ids, "accepted"), "minion": {n: Presence(True) for n in ids},
        "slurm": {n: Slurm("IDLE", "") for n in ids if inv.nodes[n].has("slurm.compute")},
        "alerts": {n: [] for n in [*ids, ""]}}
    c = Collector([Source(k, INTERVALS[k], lambda k=k: codec.encode(k, typed[k]))
                   for k in codec.COLLECTED])
    c.tick()
    for d in ("status", "pxe", "apply", "health", "reinstall", "rollout"):
        (work / d).mkdir()
    c.save(work / "status" / CACHE_NAME)
    lastrun.record(work / "apply", "apply", [(i, "ok", True, "") for i in ids])
    argv = [sys.executable, "-m", "fleet", "status", "--json", "-i", str(INVENTORY),
            "--status-state-dir", str(work / "status"), "--pxe-state", str(work / "pxe"),
            "--apply-state-dir", str(work / "apply"),
            "--health-state-dir", str(work / "health"),
            "--reinstall-state-dir", str(work / "reinstall"),
            "--rollout-state-dir", str(work / "rollout"), "--no-alerts"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    return {"n": len(ids), "cached": read_runs(argv, env, args.runs, log)}


def write_read_only(path: Path, result: dict[str, Any], machine: dict[str, str]) -> None:
    walls = [x["wall_s"] for x in result["cached"]]
    last = result["cached"][-1]["counts"]
    lines = [READ_HEADING, "", "`benchmarks/bench_status.py --read-only`: the real `fleet "
             "status --json` of the site's nodes in service (the default target) from the "
             "collector's cache, written by the collector's own code (every node on, local, "
             "accepted, connected, idle), with the sources it always reads now (stage, the "
             "last apply and health, the work locks) from empty or one-record stores. No "
             "swarm: what the read path costs, not what the collector's sources cost.", ""]
    lines += [f"- {k}: {v}" for k, v in machine.items()]
    lines += ["", "| nodes | runs | wall (median, min, max) | ok / problem / unknown |",
              "|---|---|---|---|",
              f"| {result['n']} | {len(walls)} | {statistics.median(walls):.2f} s, "
              f"{min(walls):.2f} s, {max(walls):.2f} s | "
              f"{last['ok']} / {last['problem']} / {last['unknown']} |", ""]
    report.replace_section(path, READ_HEADING, "\n".join(lines))


def write_doc(path: Path, results: list[dict[str, Any]], machine: dict[str, str],
              args: argparse.Namespace) -> None:
    lines = [HEADING, "", "`make bench-status` (benchmarks/bench_status.py): the real "
             "`fleet status --json` of N nodes with every source live: a swarm of real "
             "salt-minions (one per node, as bench-fanout), FAKE Redfish BMCs (sushy-tools; "
             "the nodes spread over a few emulator processes), a stand-in for `scontrol`, "
             "the PXE links and a kept `fleet apply` result per node; no Prometheus "
             "(`--no-alerts`).", ""]
    lines += [f"- {k}: {v}" for k, v in machine.items()]
    lines += ["", "| nodes | fake BMCs | minions ready | runs | --live wall (median, max) "
              "| power | key | minion | slurm | master CPU | minions' + BMCs' CPU "
              "| ok / problem / unknown | --live --ping wall (median; minion column; "
              "minions' CPU) | collector once | from the collector (median) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        walls = [x["wall_s"] for x in r["runs"]]
        cached = [x["wall_s"] for x in r.get("cached", [])]
        pings = r.get("ping_runs", [])
        src = {k: statistics.median(x["sources_s"].get(k, 0.0) for x in r["runs"])
               for k in ("power", "key", "minion", "slurm")}
        last = r["runs"][-1]["counts"]
        ping = (f"{statistics.median(x['wall_s'] for x in pings):.1f} s; "
                f"{statistics.median(x['sources_s'].get('minion', 0.0) for x in pings):.1f} s; "
                f"{statistics.median(x.get('nodes_cpu_s', 0.0) for x in pings):.1f} s"
                if pings else "-")
        lines.append(
            f"| {r['n']} | {r['bmcs']} | {r['ready_s']:.0f} s | {len(walls)} | "
            f"{statistics.median(walls):.1f} s, {max(walls):.1f} s | "
            + " | ".join(f"{src[k]:.1f} s" for k in src)
            + f" | {statistics.median(x['master_cpu_s'] for x in r['runs']):.1f} s | "
            f"{statistics.median(x.get('nodes_cpu_s', 0.0) for x in r['runs']):.1f} s | "
            f"{last['ok']} / {last['problem']} / {last['unknown']} | {ping} | "
            f"{r.get('collect_s', 0.0):.1f} s | "
            + (f"{statistics.median(cached):.2f} s |" if cached else "- |"))
    lines += ["", "Each source's seconds are its own, side by side (the wall is about the "
              "slowest, plus the CLI's start); the CPU columns are each --live run's, "
              "medians (the master's processes; the minions and the BMC emulators, which "
              "on a site are as many machines). `--live` asks the master's own view of its "
              "minions (`salt-run manage.alived`), as the collector; `--live --ping` sends "
              "every minion a test.ping job, whose cost here is the minions' own, one "
              "after another on their CPU (Salt 3008 loads a minion's modules again for "
              "every job), where a site's are side by side. On one host every minion "
              "connects from 127.0.0.1, so the master's view cannot tell them apart here "
              "(the lab's containers, each with its address, can: tests/lab/test_status.py). "
              "Not measured here: "
              + (args.not_measured or "nothing left out of the sizes asked for") + ".", ""]
    report.replace_section(path, HEADING, "\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="144",
                    help="node counts, spread over the site (default 144: the site)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bmcs", type=int, default=8,
                    help="fake BMC processes per BMC user (default 8)")
    ap.add_argument("--ping-runs", type=int, default=1,
                    help="runs of `fleet status --live --ping` (a test.ping job through every "
                         "minion) after the --live runs (default 1)")
    ap.add_argument("--bmc-nice", type=int, default=5,
                    help="the fake BMCs' nice value (default 5: below the master's, above "
                         "the idle minions', whose churn would starve them)")
    ap.add_argument("--bmc-cpus", metavar="LIST", default="",
                    help="pin the fake BMCs to these CPUs (default '': any CPU, as other "
                         "machines would be)")
    ap.add_argument("--minion-nice", type=int, default=19,
                    help="the minions' nice value (default 19)")
    last = (os.cpu_count() or 1) - 1  # the nodes on the last CPU, the master on the rest
    ap.add_argument("--minion-cpus", metavar="LIST", default=str(last) if last else None,
                    help="pin the minions to these CPUs (taskset -c LIST; default the last "
                         "CPU, '' none)")
    ap.add_argument("--master-cpus", metavar="LIST", default=f"0-{last - 1}" if last else None,
                    help="pin the master and the fleet CLI to these CPUs (default the "
                         "others, '' none)")
    ap.add_argument("--minion-processes", action="store_true",
                    help="a minion job a forked process, as Salt's default (default: a "
                         "thread, multiprocessing: False, stated in the report)")
    ap.add_argument("--ready-timeout", type=float, default=900)
    ap.add_argument("--not-measured", default="",
                    help="what the doc says was not measured (e.g. the 144 nodes)")
    ap.add_argument("--read-only", action="store_true",
                    help="the collector's read path alone (no swarm)")
    ap.add_argument("--write", type=Path, metavar="MD")
    ap.add_argument("--json", type=Path, metavar="FILE")
    args = ap.parse_args()

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    machine = {"CPU": f"{report.cpu_model()}; {os.cpu_count()} logical CPUs",
               "memory": report.mem_total(), "OS": report.os_name(),
               "fleet at commit": report.commit(),
               "minions' nice value": str(args.minion_nice),
               "fake BMCs' nice value": str(args.bmc_nice),
               "fake BMCs pinned to CPUs": args.bmc_cpus or "no (any CPU)",
               "minions' own file": ", ".join(f"{k}: {v}" for k, v in
                                              minion_opts(args).items()),
               "minions pinned to CPUs": args.minion_cpus or "no (all CPUs)",
               "master and fleet CLI pinned to CPUs": args.master_cpus or "no (all CPUs)",
               "minion jobs": "forked processes (Salt's default)" if args.minion_processes
               else "threads (multiprocessing: False in the swarm's minion file: on one "
                    "host a fork per job is paid one minion after another)",
               "load average before": report.load_average(),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    work = Path(tempfile.mkdtemp(prefix="fleet-status-", dir="/tmp"))
    if args.read_only:
        for k in ("minions' nice value", "fake BMCs' nice value", "minions' own file",
                  "fake BMCs pinned to CPUs", "minions pinned to CPUs",
                  "master and fleet CLI pinned to CPUs", "minion jobs"):
            machine.pop(k)
        try:
            result = read_only(args, work, log)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        machine["load average after"] = report.load_average()
        if args.json:
            args.json.write_text(json.dumps({"machine": machine, "result": result}, indent=1))
        if args.write:
            write_read_only(args.write, result, machine)
        return 0
    results = []
    try:
        conf = swarmconf.render(work / "conf")
        for n in [int(x) for x in args.sizes.split(",")]:
            log(f"{n} nodes")
            d = work / f"n{n}"
            d.mkdir()
            results.append(one_size(conf, n, d, args, log))
            if args.json:
                args.json.write_text(json.dumps({"machine": machine, "results": results},
                                                indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    machine["load average after"] = report.load_average()
    if args.write and results:
        write_doc(args.write, results, machine, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
