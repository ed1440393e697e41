"""Prometheus at the site's size (`make bench-monitoring`): scrape duration, rule
evaluation and memory for the real inventory's node targets.

One real ``prometheus-node-exporter`` on this host is scraped once; its answer (what
every node's exporter serves, without the GPU and Slurm textfiles) is then served by one
small HTTP server per node target, each on its own loopback address (127.0.1.N, the
exporter's port), so that a real Prometheus scrapes as many targets as the inventory
has nodes, with the labels and the alert rules fleet renders for them
(fleet.render.monitoring). Prometheus runs ``--seconds`` per run at the inventory's scrape
interval (``--interval`` overrides it) and is then asked for the scrape durations, the
rule groups' evaluation time, its head series and its resident memory. Medians of
``--runs`` runs, with min and max.

    .venv/bin/python benchmarks/bench_monitoring.py --runs 3 --write docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report
from fleet.inventory.load import load_inventory
from fleet.render import monitoring

SECTION = "## Monitoring"
EXPORTER = "prometheus-node-exporter"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"bench-monitoring: {url} did not answer in "
                                 f"{timeout:g}s") from None
            time.sleep(0.2)


def exporter_sample(work: Path) -> bytes:
    """What the real node exporter serves on this host (default collectors)."""
    exe = shutil.which(EXPORTER)
    if exe is None:
        raise SystemExit(f"bench-monitoring: {EXPORTER} not found (tools/install-host-deps.sh "
                         "installs it)")
    port = free_port()
    proc = subprocess.Popen([exe, f"--web.listen-address=127.0.0.1:{port}",
                             f"--collector.textfile.directory={work}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        wait_http(url, 30)
        with urllib.request.urlopen(url, timeout=10) as resp:
            return bytes(resp.read())
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class _Metrics(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(addresses: list[str], port: int, body: bytes) -> list[ThreadingHTTPServer]:
    handler = type("Handler", (_Metrics,), {"body": body})
    servers = []
    for addr in addresses:
        srv = ThreadingHTTPServer((addr, port), handler)
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
    return servers


def config(groups: list[dict[str, Any]], interval: int, rules: Path, self_port: int) -> str:
    return yaml.safe_dump({
        "global": {"scrape_interval": f"{interval}s", "evaluation_interval": f"{interval}s"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {"job_name": "node", "static_configs": groups},
            {"job_name": "prometheus",
             "static_configs": [{"targets": [f"127.0.0.1:{self_port}"]}]},
        ]}, sort_keys=False)


def _value(base: str, expr: str) -> float | None:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as resp:
        data = json.load(resp)
    result = data["data"]["result"]
    return float(result[0]["value"][1]) if result else None


def query(base: str, expr: str) -> float:
    value = _value(base, expr)
    if value is None:
        raise SystemExit(f"bench-monitoring: no value for {expr}")
    return value


def one_run(inv_path: Path, body: bytes, interval: int | None, seconds: float
            ) -> dict[str, float]:
    inv = load_inventory(inv_path)
    every = interval or inv.raw.site.monitoring.scrape_interval_s
    port = monitoring.PORTS["node_exporter"]
    groups = monitoring.targets(inv)["node"]
    # 127.0.0.0/8 is all loopback: one address per target, 250 to a /24
    addresses = [f"127.0.{1 + i // 250}.{i % 250 + 1}" for i in range(len(groups))]
    for group, addr in zip(groups, addresses, strict=True):
        group["targets"] = [f"{addr}:{port}"]
    servers = serve(addresses, port, body)
    work = Path(tempfile.mkdtemp(prefix="fleet-bench-mon-"))
    self_port = free_port()
    rules = work / "rules.yml"
    rules.write_text(yaml.safe_dump(monitoring.rules(inv), sort_keys=False))
    (work / "prometheus.yml").write_text(config(groups, every, rules, self_port))
    proc = subprocess.Popen(
        ["prometheus", f"--config.file={work / 'prometheus.yml'}",
         f"--storage.tsdb.path={work / 'data'}",
         f"--web.listen-address=127.0.0.1:{self_port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{self_port}"
    try:
        wait_http(f"{base}/-/ready", 60)
        # the first scrapes are spread over one interval: measure once all have answered
        deadline = time.monotonic() + 3 * every + 30
        while (up := _value(base, 'sum(up{job="node"})')) != len(groups):
            if time.monotonic() > deadline:
                raise SystemExit(f"bench-monitoring: {up:g} of {len(groups)} targets up "
                                 f"after {3 * every + 30} s")
            time.sleep(1)
        time.sleep(seconds)
        return {
            "targets": float(len(groups)),
            "interval_s": float(every),
            "scrape_p50_ms": 1000 * query(
                base, 'quantile(0.5, scrape_duration_seconds{job="node"})'),
            "scrape_max_ms": 1000 * query(base, 'max(scrape_duration_seconds{job="node"})'),
            "samples_per_scrape": query(base, 'avg(scrape_samples_scraped{job="node"})'),
            "rules_eval_ms": 1000 * query(
                base, "sum(prometheus_rule_group_last_duration_seconds)"),
            "head_series": query(base, "prometheus_tsdb_head_series"),
            "rss_mb": query(base, 'process_resident_memory_bytes{job="prometheus"}') / 2**20,
        }
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for srv in servers:
            srv.shutdown()
            srv.server_close()
        shutil.rmtree(work, ignore_errors=True)


ROWS = [("scrape duration, median target (ms)", "scrape_p50_ms", "{:.1f}"),
        ("scrape duration, slowest target (ms)", "scrape_max_ms", "{:.1f}"),
        ("samples per scrape", "samples_per_scrape", "{:.0f}"),
        ("alert rules, one evaluation of all groups (ms)", "rules_eval_ms", "{:.1f}"),
        ("head series", "head_series", "{:.0f}"),
        ("Prometheus resident memory (MB)", "rss_mb", "{:.0f}")]


def section(runs: list[dict[str, float]], seconds: float, sample: bytes) -> str:
    first = runs[0]
    lines = [SECTION, "",
             f"`make bench-monitoring` ({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, commit "
             f"{report.commit()}): a real Prometheus ({_version()}) scraping "
             f"{first['targets']:.0f} node targets (the real inventory's, with their labels "
             f"and fleet's alert rules) every {first['interval_s']:.0f} s for {seconds:g} s "
             "once all had answered; "
             f"each target serves what this host's real node exporter served "
             f"({len(sample) / 1024:.0f} KiB, no GPU or Slurm textfiles), from one Python "
             "HTTP server per target on its own loopback address. Medians of "
             f"{len(runs)} runs, min-max.", "",
             f"Machine: {report.cpu_model()}, {report.mem_total()}, {report.os_name()}; load "
             f"average at the end {report.load_average()} (the CPUs are shared with other "
             "work: the scrape times include the Python servers' own time).", "",
             "| what | median | min-max |", "|---|---:|---:|"]
    for label, key, fmt in ROWS:
        vals = [r[key] for r in runs]
        lines.append(f"| {label} | {fmt.format(statistics.median(vals))} | "
                     f"{fmt.format(min(vals))}-{fmt.format(max(vals))} |")
    return "\n".join(lines) + "\n"


def _version() -> str:
    out = subprocess.run(["prometheus", "--version"], capture_output=True, text=True,
                         check=False)
    words = (out.stdout or out.stderr).split()
    return f"prometheus {words[2]}" if len(words) > 2 else "prometheus"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-i", "--inventory", type=Path, default=report.ROOT / "inventory.yaml")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=120.0,
                    help="how long Prometheus scrapes in each run (default 120)")
    ap.add_argument("--interval", type=int, help="scrape interval in seconds (default: "
                                                 "the inventory's site.monitoring)")
    ap.add_argument("--write", type=Path, metavar="FILE",
                    help="replace the Monitoring section of FILE (docs/benchmarks.md)")
    args = ap.parse_args()
    if shutil.which("prometheus") is None:
        raise SystemExit("bench-monitoring: prometheus not found (tools/install-host-deps.sh "
                         "installs it)")
    with tempfile.TemporaryDirectory() as tmp:
        sample = exporter_sample(Path(tmp))
    runs = []
    for i in range(args.runs):
        runs.append(one_run(args.inventory, sample, args.interval, args.seconds))
        print(f"run {i + 1}: " + ", ".join(f"{k} {v:.1f}" for k, v in runs[-1].items()),
              flush=True)
    text = section(runs, args.seconds, sample)
    print(text)
    if args.write:
        report.replace_section(args.write, SECTION, text)


if __name__ == "__main__":
    main()
