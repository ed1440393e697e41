"""``make bench-fanout``: one salt-master as the site renders it, one real salt-minion
process per node, all started at once (tests/support/swarm.py), measured.

Per size (the site's 144 nodes, then generated inventories of 2x, 4x... the site while
this machine's memory holds them), each run on a fresh swarm:

- *auth*: spawn of all minions -> the master's last ``salt/auth`` accept, and the last
  ``salt/minion/<id>/start`` (the minion is connected and listening: *ready*);
- *test.ping*: ``--pings`` publishes in a row, each until every id returned (or 60 s);
- *pillar refresh*: ``saltutil.refresh_pillar wait=True`` (the master compiles every
  node's pillar) until every id returned;
- *highstate test=True*: ``state.apply test=True`` of each node's full highstate through
  fleet apply's own collection (fleet.apply.run), ``--highstates`` times;
- *cheap state.apply*: ``state.apply swarm-cheap`` (one file.managed in the minion's cache
  dir, from the master's file server) for real;
- *master restart*: SIGTERM, start, then ``test.ping`` until every id returned: the
  minions re-authenticate on the first publish they cannot decrypt (the re-auth storm).

Master peak RSS (process tree, sampled every 0.5 s) and CPU seconds per phase; per-minion
RSS after the highstate (median, max). Results -> the ``## Fan-out`` section of
docs/benchmarks.md (``--write``) and JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))  # support.swarmconf

import report  # noqa: E402
from fleet.apply.run import Options, apply  # noqa: E402
from fleet.master.highstate import Status  # noqa: E402
from fleet.master.pyclient import SaltMaster  # noqa: E402
from support import swarmconf  # noqa: E402
from support.swarm import Swarm, cpu_ticks, rss_kb  # noqa: E402

HEADING = "## Fan-out"
TICK = os.sysconf("SC_CLK_TCK")
KEYS = Path("/var/tmp/fleet-swarm-keys")
MINION_MB_GUESS = 85.0   # before the first size measured it
MASTER_MB_GUESS = 1500.0
MEM_USE = 0.75           # at most this share of MemAvailable for one size
# a highstate job is a second process in every minion (forked, then compiling its states):
# 60 MB and growing each, measured at 144 nodes on 2026-12-01, when 144 of them at once
# left the page cache under 1 GB and no highstate returned within 25 minutes; 70 MB let a
# later run start them anyway (MemAvailable counts the minions' shared pages once)
JOB_MB = 100.0


@dataclass
class Sampler:
    pids: Callable[[], list[int]]
    peak_kb: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        def loop() -> None:
            while not self._stop.wait(0.5):
                self.peak_kb = max(self.peak_kb, rss_kb(self.pids()))
        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()


def mem_available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Bus:
    """The master's event bus, read by this process (as `salt-run state.event` would)."""

    def __init__(self, sw: Swarm) -> None:
        import salt.config
        import salt.utils.event

        opts = salt.config.client_config(str(sw.config_dir / "master"))
        self.event = salt.utils.event.get_master_event(opts, opts["sock_dir"], listen=True)

    def until(self, done: Callable[[str, dict[str, Any], float], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ev = self.event.get_event(wait=0.5, full=True)
            if ev and done(str(ev.get("tag", "")), ev.get("data") or {}, time.monotonic()):
                return True
        return False

    def close(self) -> None:
        self.event.destroy()


def timed_job(sw: Swarm, fun: str, args: list[Any], kwargs: dict[str, Any],
              timeout: float) -> tuple[float, int]:
    """Publish to every id; seconds until every id returned (or the timeout), and how many
    never returned."""
    import salt.client
    import salt.config

    opts = salt.config.client_config(str(sw.config_dir / "master"))
    client = salt.client.LocalClient(mopts=opts)
    try:
        t0 = time.monotonic()
        pub = client.run_job(sw.ids, fun, arg=args, kwarg=kwargs or None, tgt_type="list",
                             listen=True, timeout=60)
        jid = pub["jid"]
        got: set[str] = set()
        deadline = t0 + timeout
        while time.monotonic() < deadline and len(got) < len(sw.ids):
            ev = client.event.get_event(wait=1, tag=f"salt/job/{jid}/ret/", full=True,
                                        match_type="startswith")
            if ev:
                got.add(str(ev["tag"]).rsplit("/", 1)[1])
        wall = time.monotonic() - t0
        return wall, len(set(sw.ids) - got)
    finally:
        client.destroy()


def one_run(conf: swarmconf.SiteConfigs, ids: list[str], tmp: Path, args: argparse.Namespace,
            log: Callable[[str], None], run_index: int) -> dict[str, Any]:
    sw = Swarm(root=tmp / "s", ids=ids, master_conf=conf.master_conf,
               minion_conf=conf.minion_conf, bin_dir=ROOT / ".venv" / "bin", key_store=KEYS,
               minion_nice=args.minion_nice)
    sw.write()
    out: dict[str, Any] = {"n": len(ids)}
    with sw, Sampler(sw.master_pids) as sampler:
        sw.start_master()
        bus = Bus(sw)
        try:
            auth: dict[str, float] = {}
            ready: dict[str, float] = {}
            cpu0 = cpu_ticks(sw.master_pids())
            t0 = time.monotonic()
            sw.start_minions()
            log(f"  {len(ids)} minions spawned in {time.monotonic() - t0:.1f}s")

            def started(tag: str, data: dict[str, Any], now: float) -> bool:
                if tag == "salt/auth" and data.get("act") == "accept" and data.get("id"):
                    auth.setdefault(str(data["id"]), now - t0)
                elif tag.startswith("salt/minion/") and tag.endswith("/start"):
                    ready.setdefault(tag.split("/")[2], now - t0)
                return len(ready) >= len(ids) and len(auth) >= len(ids)

            complete = bus.until(started, args.ready_timeout)
            out["auth_s"] = max(auth.values()) if len(auth) >= len(ids) else None
            out["ready_s"] = max(ready.values()) if len(ready) >= len(ids) else None
            out["not_ready"] = len(ids) - len(ready)
            out["cpu_start_s"] = (cpu_ticks(sw.master_pids()) - cpu0) / TICK
            log(f"  auth {out['auth_s']}, ready {out['ready_s']} "
                f"({out['not_ready']} not ready){'' if complete else ' (timed out)'}")
            time.sleep(3)  # the start events' own jobs (mine, grains) settle

            pings, ping_missing = [], 0
            cpu0 = cpu_ticks(sw.master_pids())
            for _ in range(args.pings):
                wall, missing = timed_job(sw, "test.ping", [], {}, 60)
                pings.append(wall)
                ping_missing += missing
            out["ping_s"] = pings
            out["ping_missing"] = ping_missing
            out["cpu_ping_s"] = (cpu_ticks(sw.master_pids()) - cpu0) / TICK
            log(f"  test.ping x{len(pings)}: median {statistics.median(pings):.2f}s, "
                f"{ping_missing} missing")

            cpu0 = cpu_ticks(sw.master_pids())
            out["pillar_s"], out["pillar_missing"] = timed_job(
                sw, "saltutil.refresh_pillar", [], {"wait": True}, 300)
            out["cpu_pillar_s"] = (cpu_ticks(sw.master_pids()) - cpu0) / TICK
            log(f"  pillar refresh {out['pillar_s']:.1f}s")

            hs = []
            want = args.highstates if run_index < args.highstate_runs else 0
            jobs_mb, avail = len(ids) * JOB_MB, mem_available_mb()
            if want and jobs_mb > avail * MEM_USE:
                out["highstate_skipped"] = (
                    f"not run: {len(ids)} highstate jobs at once need about "
                    f"{jobs_mb / 1024:.1f} GB more ({len(ids)} x {JOB_MB:.0f} MB) and "
                    f"{avail / 1024:.1f} GB were available ({MEM_USE:.0%} allowed)")
                log(f"  highstate test=True {out['highstate_skipped']}")
                want = 0
            for _ in range(want):
                cpu0 = cpu_ticks(sw.master_pids())
                master = SaltMaster(sw.config_dir)
                t = time.monotonic()
                try:
                    res = apply(master, ids, Options(test=True, timeout=args.hs_timeout),
                                lambda _m: None)
                finally:
                    master.close()
                wall = time.monotonic() - t
                counts: dict[str, int] = {}
                for r in res:
                    counts[r.status.value] = counts.get(r.status.value, 0) + 1
                returned = [r.returned_s for r in res if r.returned_s is not None]
                run_s = [r.run_s for r in res if r.run_s is not None]
                hs.append({"wall_s": wall, "counts": counts,
                           "missing": sum(1 for r in res if r.status in (
                               Status.NO_RETURN, Status.LOST, Status.NO_KEY)),
                           "states_median": statistics.median([r.states for r in res]),
                           "return_median_s": statistics.median(returned) if returned else None,
                           "run_median_s": statistics.median(run_s) if run_s else None,
                           "cpu_master_s": (cpu_ticks(sw.master_pids()) - cpu0) / TICK})
                log(f"  highstate test=True {wall:.1f}s {counts}")
            out["highstate"] = hs
            minion_kb = [rss_kb(sw.minion_pids(m)) for m in ids]
            out["minion_rss_mb_median"] = statistics.median(minion_kb) / 1024
            out["minion_rss_mb_sum"] = sum(minion_kb) / 1024
            out["minion_rss_mb_max"] = max(minion_kb) / 1024

            master = SaltMaster(sw.config_dir)
            cpu0 = cpu_ticks(sw.master_pids())
            t = time.monotonic()
            try:
                res = apply(master, ids, Options(args=("swarm-cheap", "saltenv=swarm"),
                                                 timeout=600), lambda _m: None)
            finally:
                master.close()
            out["cheap_s"] = time.monotonic() - t
            out["cheap_missing"] = sum(1 for r in res if r.status.bad)
            out["cpu_cheap_s"] = (cpu_ticks(sw.master_pids()) - cpu0) / TICK
            log(f"  cheap state.apply {out['cheap_s']:.1f}s, {out['cheap_missing']} bad")
            out["master_peak_mb_before_restart"] = sampler.peak_kb / 1024
        finally:
            bus.close()

        t = time.monotonic()
        sw.stop_master()
        sw.start_master()
        out["master_restart_s"] = time.monotonic() - t
        bus = Bus(sw)
        reauth: dict[str, float] = {}
        try:
            t0 = time.monotonic()
            cpu0 = cpu_ticks(sw.master_pids())
            wall, missing = timed_job(sw, "test.ping", [], {}, 120)
            # auths that arrived meanwhile are on the bus still
            bus.until(lambda tag, data, now: (
                tag == "salt/auth" and data.get("act") == "accept"
                and reauth.setdefault(str(data.get("id")), now - t0) is None), 5)
            out["reauth_ping_s"], out["reauth_missing"] = wall, missing
            out["reauths"] = len(reauth)
            out["reauth_last_s"] = max(reauth.values()) if reauth else None
            out["cpu_reauth_s"] = (cpu_ticks(sw.master_pids()) - cpu0) / TICK
            log(f"  after a master restart: every ping back in {wall:.1f}s, {missing} missing")
        finally:
            bus.close()
        out["master_peak_mb"] = sampler.peak_kb / 1024
    return out


def site_pillar(n: int, tmp: Path) -> Path:
    """The site's pillar for 144, else the render of a generated inventory of n nodes."""
    if n == 0:
        return ROOT / "pillar"
    inv = tmp / f"inv-{n}.yaml"
    subprocess.run([sys.executable, str(HERE / "gen_inventory.py"), "--nodes", str(n),
                    "-o", str(inv)], check=True, cwd=ROOT)
    out = tmp / f"render-{n}"
    subprocess.run([str(ROOT / ".venv" / "bin" / "fleet"), "render", "-q", "-i", str(inv),
                    "-o", str(out)], check=True, cwd=ROOT)
    return out / "pillar"


def med(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def fmt(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def write_doc(path: Path, results: list[dict[str, Any]], stopped: str, machine: dict[str, str],
              master_conf: str, minion_conf: str, args: argparse.Namespace) -> None:
    lines = [HEADING, "",
             "<!-- Written by benchmarks/bench_fanout.py (`make bench-fanout`); rerun it "
             "rather than editing this section. -->", "",
             "One salt-master configured as `provisioning.master` renders it for the site, "
             "and one real `salt-minion` process per node id (its own config, pki, cache "
             "and socket dirs; its own key, pre-accepted), all spawned at once on this one "
             "host (`tests/support/swarm.py`). The minion config is the one `base.minion` "
             "renders. Each figure is the median over the runs (each run a fresh swarm: "
             "new master cache, new minion caches), with the worst run in brackets where "
             "it matters.", "",
             "### Machine", ""]
    lines += [f"- {k}: {v}" for k, v in machine.items()]
    lines += ["", "### Reproduce", "", "```sh", "make bench-fanout",
              f"# or: .venv/bin/python benchmarks/bench_fanout.py --runs {args.runs} "
              f"--sizes {args.sizes} --write docs/benchmarks.md", "```", "",
              "### Results", "",
              "| nodes | runs | all authenticated (s) | all ready (s) | test.ping, all "
              "returned (s) | ping returns missing | pillar refresh (s) | highstate "
              "test=True (s) | highstate returns missing | cheap state.apply (s) | all back "
              "after master restart (s) | master peak RSS (MB) | minion RSS median / max (MB) |",
              "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in results:
        runs = r["runs"]
        hs = [h for run in runs for h in run["highstate"]]
        pings = [p for run in runs for p in run["ping_s"]]
        skipped = next((x["highstate_skipped"] for x in runs if x.get("highstate_skipped")), "-")
        hs_cell = f"{fmt(med([h['wall_s'] for h in hs]))} ({len(hs)} runs)" if hs else skipped
        lines.append(
            f"| {r['n']} | {len(runs)} | {fmt(med([x['auth_s'] for x in runs]))} "
            f"| {fmt(med([x['ready_s'] for x in runs]))} "
            f"| {fmt(med(pings), 2)} (max {fmt(max(pings), 2)}, {len(pings)} pings) "
            f"| {sum(x['ping_missing'] for x in runs)} "
            f"| {fmt(med([x['pillar_s'] for x in runs]))} "
            f"| {hs_cell} "
            f"| {sum(h['missing'] for h in hs)} "
            f"| {fmt(med([x.get('cheap_s') for x in runs]))} "
            f"| {fmt(med([x.get('reauth_ping_s') for x in runs]))} "
            f"| {fmt(med([x.get('master_peak_mb') for x in runs]), 0)} "
            f"| {fmt(med([x['minion_rss_mb_median'] for x in runs]), 0)} / "
            f"{fmt(max(x['minion_rss_mb_max'] for x in runs), 0)} |")
    lines += ["", "Master CPU seconds per phase (median): ", "",
              "| nodes | start + auth | 1 test.ping | pillar refresh | highstate test=True "
              "| cheap apply | re-auth after restart | highstate per node (s, wall / "
              "master CPU) |", "|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in results:
        runs = r["runs"]
        hs = [h for run in runs for h in run["highstate"]]
        hs_wall = med([h["wall_s"] for h in hs])
        hs_cpu = med([h["cpu_master_s"] for h in hs])
        per_ping = med([x["cpu_ping_s"] / max(1, len(x["ping_s"]))
                        if x.get("cpu_ping_s") is not None else None for x in runs])
        lines.append(
            f"| {r['n']} | {fmt(med([x.get('cpu_start_s') for x in runs]))} | {fmt(per_ping, 2)} "
            f"| {fmt(med([x.get('cpu_pillar_s') for x in runs]))} | {fmt(hs_cpu)} "
            f"| {fmt(med([x.get('cpu_cheap_s') for x in runs]))} "
            f"| {fmt(med([x.get('cpu_reauth_s') for x in runs]))} "
            f"| {fmt(hs_wall / r['n'] if hs_wall else None, 2)} / "
            f"{fmt(hs_cpu / r['n'] if hs_cpu else None, 3)} |")
    lines += ["", f"Growth: {stopped}", "", "### The master config used", "",
              "`master.d/fleet.conf` as `provisioning.master` renders it for the site "
              "(paths moved to this checkout; the swarm adds only `interface`, ports and "
              "its own directories, and a file-server env `swarm` for the cheap state):", "",
              "```yaml", master_conf.rstrip(), "```", "",
              "Each minion's `minion.d/fleet.conf` (the first id's):", "", "```yaml",
              minion_conf.rstrip(), "```"]
    report.replace_section(path, HEADING, "\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes", default="0.25,1,2,4",
                    help="multiples of the site (1 = the site's own inventory), in order; "
                         "fractions like 0.25 take ids spread over the site (default 0.25,1,2,4)")
    ap.add_argument("--pings", type=int, default=10)
    ap.add_argument("--rev", default="HEAD",
                    help="the commit whose salt/ and pillar/ the swarm runs (default HEAD)")
    ap.add_argument("--skip", type=lambda v: [float(x) for x in v.split(",")], default=[],
                    help=argparse.SUPPRESS)  # sizes already measured (a resumed run)
    ap.add_argument("--highstates", type=int, default=1,
                    help="highstate test=True publishes per run that has them")
    ap.add_argument("--highstate-runs", type=int, default=1,
                    help="how many of the runs (the first ones) include the highstate "
                         "(default 1: at 144 nodes on 2 cores it takes minutes)")
    ap.add_argument("--hs-timeout", type=float, default=1800)
    ap.add_argument("--minion-nice", type=int, default=10,
                    help="the minions' nice value (default 10): on this one host they share "
                         "the master's CPUs, which real nodes do not; 0 as before 2026-12-01")
    ap.add_argument("--ready-timeout", type=float, default=600)
    ap.add_argument("--write", type=Path, metavar="MD")
    ap.add_argument("--json", type=Path, metavar="FILE")
    args = ap.parse_args()

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    machine = {"CPU": f"{report.cpu_model()}; {os.cpu_count()} logical CPUs",
               "memory": report.mem_total(), "OS": report.os_name(),
               "Salt": _salt_version(), "fleet at commit": report.commit(),
               "salt/ and pillar/ from": args.rev,
               "minions' nice value": str(args.minion_nice),
               "load average before": report.load_average(),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    site_n = len(swarmconf.render_ids())
    results: list[dict[str, Any]] = []
    stopped = "every size asked for was measured."
    minion_mb, master_mb = MINION_MB_GUESS, MASTER_MB_GUESS
    first_conf: tuple[str, str] | None = None
    work = Path(tempfile.mkdtemp(prefix="fleet-fanout-", dir="/tmp"))
    # the committed states and pillar (HEAD), not the working tree: others edit it meanwhile
    tree = work / "tree"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.rev, "salt", "pillar"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    try:
        for mult in [float(x) for x in args.sizes.split(",")]:
            if mult in args.skip:
                continue
            n = round(site_n * mult)
            need = n * minion_mb + master_mb
            avail = mem_available_mb()
            if need > avail * MEM_USE:
                stopped = (f"stopped before {n} nodes ({mult:g}x the site): they need about "
                           f"{need / 1024:.1f} GB ({n} x {minion_mb:.0f} MB per minion, as "
                           f"measured, + {master_mb:.0f} MB of master) and this machine had "
                           f"{avail / 1024:.1f} GB available ({MEM_USE:.0%} of it allowed: "
                           "others work here too). Memory, not the master, ends the growth "
                           "on this host: one minion process per node costs "
                           f"~{minion_mb:.0f} MB.")
                log(stopped)
                break
            pillar = tree / "pillar" if mult <= 1 else site_pillar(n, work)
            conf = swarmconf.render(work / f"conf-{n}", pillar, tree / "salt")
            ids = swarmconf.spread(conf.ids, n)
            if first_conf is None or mult == 1:
                first_conf = (conf.master_conf, conf.minion_conf(ids[0]))
            runs = []
            for i in range(args.runs):
                log(f"{len(ids)} nodes, run {i + 1}/{args.runs}")
                tmp = Path(tempfile.mkdtemp(prefix="r", dir=work))
                try:
                    runs.append(one_run(conf, ids, tmp, args, log, i))
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
                if args.json:  # after every run: a long benchmark cut short keeps them
                    args.json.write_text(json.dumps({"machine": machine, "results": [
                        *results, {"n": len(ids), "runs": runs}]}, indent=1))
            results.append({"n": len(ids), "runs": runs})
            minion_mb = max(r["minion_rss_mb_max"] for r in runs)
            master_mb = max(r["master_peak_mb"] for r in runs)
            if args.json:
                args.json.write_text(json.dumps({"machine": machine, "results": results},
                                                indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    machine["load average after"] = report.load_average()
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "results": results,
                                         "stopped": stopped}, indent=1))
    if args.write and results and first_conf:
        write_doc(args.write, results, stopped, machine, first_conf[0], first_conf[1], args)
    return 0


def _salt_version() -> str:
    import salt.version

    return str(salt.version.__version__)


if __name__ == "__main__":
    sys.exit(main())
