"""Monitoring in the lab: Prometheus on head-01 scraping every lab node, alerts that
follow what a node should have, fleet's collectors on real systemd timers.

Run with the rest of the lab tests: `make test-lab` (FLEET_LAB=1), or only these:
`FLEET_LAB=1 PYTHONPATH=tools .venv/bin/pytest tests/lab/test_monitoring.py -v`.
The lab overlay scrapes and evaluates every 5 s (lab/overlay.yaml, site.monitoring).
The lab's GPU nodes have no GPU: the GPU collector runs a stand-in nvidia-smi (lab
pillar monitoring:lookup:collectors:nvidia_smi) that these tests write; the InfiniBand
collector (node_exporter's own) reads a fixture sysfs tree on a loopback port.
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
import urllib.request
from typing import Any

from labtools import ROOT, Lab, node_ids, podman_exec, poll, sh

from fleet.lab import podman as pm
from fleet.monitoring import alerts

STAND_IN = "/usr/local/sbin/fleet-stand-in-nvidia-smi"
GPU_FIXTURE = ROOT / "tests" / "monitoring" / "fixtures" / "nvidia-smi-query.csv"
SLURM_PROM = "/var/lib/prometheus/node-exporter/fleet-slurm.prom"
SLURM_COLLECTOR = "/usr/local/lib/fleet-metrics/fleet-slurm-metrics.py"
CONTROLLER = node_ids("slurm.controller")[0]


def _site(lab: Lab) -> dict[str, Any]:
    return lab.pillar("site")["site"]["monitoring"]  # type: ignore[no-any-return]


def _prometheus(lab: Lab) -> str:
    """Prometheus at head-01's management address (the lab host is on that network)."""
    site = _site(lab)
    return f"http://{site['address']}:{site['ports']['prometheus']}"


def _api(lab: Lab, path: str, **params: str) -> Any:
    url = _prometheus(lab) + path + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=10) as resp:
        doc = json.loads(resp.read())
    assert doc["status"] == "success", doc
    return doc["data"]


def _query(lab: Lab, expr: str) -> list[dict[str, Any]]:
    return _api(lab, "/api/v1/query", query=expr)["result"]  # type: ignore[no-any-return]


def _node_targets(lab: Lab) -> dict[str, str]:
    """node -> health of its job="node" target."""
    active = _api(lab, "/api/v1/targets", state="active")["activeTargets"]
    return {t["labels"]["node"]: t["health"] for t in active if t["labels"].get("job") == "node"}


def _alert(lab: Lab, name: str, node: str) -> alerts.Alert | None:
    for alert in alerts.fetch(_prometheus(lab)):
        if alert.name == name and alert.node == node and alert.state in ("pending", "firing"):
            return alert
    return None


def test_prometheus_scrapes_every_lab_node(lab: Lab) -> None:
    want = {n.hostname: "up" for n in lab.nodes}
    poll("every lab node's exporter up in Prometheus",
         lambda: _node_targets(lab) == want or None, timeout=120, interval=2)


def test_daemons_answer_on_the_management_address_only(lab: Lab) -> None:
    """node_exporter (every node), Prometheus, Alertmanager, the prober (head-01): each
    listening socket on its port is the node's own provisioning address, none a wildcard."""
    ports = _site(lab)["ports"]
    for node in lab.nodes:
        address = lab.pillar(f"nodes/{node.hostname}")["node"]["monitoring"]["address"]
        out = sh(lab.host(node.hostname), "ss -Hltn").stdout
        mine = [ports["node_exporter"]]
        if node.hostname == _site(lab)["host"]:
            mine += [ports["prometheus"], ports["alertmanager"], ports["blackbox"]]
        for port in mine:
            local = [line.split()[3] for line in out.splitlines()
                     if line.split()[3].endswith(f":{port}")]
            assert local == [f"{address}:{port}"], (node.hostname, port, local)
        assert ":9094" not in out, f"{node.hostname}: Alertmanager's gossip port is open"


def test_a_stopped_exporter_makes_node_down_pending_within_two_scrape_intervals(
        lab: Lab) -> None:
    node = lab.with_role("slurm.compute")[-1].hostname
    interval = _site(lab)["interval_s"]
    poll(f"{node} up first", lambda: _node_targets(lab).get(node) == "up" or None,
         timeout=60, interval=1)
    podman_exec(lab, node, "systemctl", "stop", "prometheus-node-exporter")
    try:
        # two scrape intervals, plus one rule evaluation (the same interval) to see it
        alert = poll(f"NodeDown pending for {node}", lambda: _alert(lab, "NodeDown", node),
                     timeout=3 * interval + 2, interval=0.5)
        assert alert.state in ("pending", "firing") and alert.severity == "critical"
    finally:
        podman_exec(lab, node, "systemctl", "start", "prometheus-node-exporter")
    poll(f"{node} up again", lambda: _node_targets(lab).get(node) == "up" or None,
         timeout=60, interval=1)
    poll(f"NodeDown for {node} gone", lambda: _alert(lab, "NodeDown", node) is None or None,
         timeout=60, interval=1)


def _script(lab: Lab, node: str, text: str) -> subprocess.CompletedProcess[str]:
    """A shell script run on ``node`` (its text on stdin: no quoting through layers)."""
    return pm.podman(lab.paths, "exec", "-i", lab.plan.node(node).container, "sh", "-s",
                     input=text, check=False, timeout=60)


def _write_stand_in(lab: Lab, node: str, gpus: int) -> None:
    """The stand-in nvidia-smi prints the first ``gpus`` lines of the fixture query output
    (the collector's own query, csv,noheader,nounits); then the collector runs once."""
    lines = "".join(GPU_FIXTURE.read_text().splitlines(keepends=True)[:gpus])
    script = ("#!/bin/sh\n# stand-in nvidia-smi (tests/lab/test_monitoring.py): fixture output\n"
              f"cat <<'EOF'\n{lines}EOF\n")
    r = _script(lab, node, f"cat > {STAND_IN} <<'STAND_IN'\n{script}STAND_IN\n"
                           f"chmod 0755 {STAND_IN}\n")
    assert r.returncode == 0, r.stderr
    r = podman_exec(lab, node, "systemctl", "start", "fleet-gpu-metrics.service", timeout=60)
    assert r.returncode == 0, r.stderr


def _gpus_seen(lab: Lab, node: str) -> float | None:
    result = _query(lab, f'fleet_gpus_visible{{node="{node}"}}')
    return float(result[0]["value"][1]) if result else None


def test_gpu_collector_and_the_gpu_count_alert(lab: Lab) -> None:
    node = lab.with_role("nvidia")[0].hostname
    expected = lab.pillar(f"nodes/{node}")["node"]["hardware"]["gpu"]["count"]
    assert expected == 8
    interval = _site(lab)["interval_s"]
    try:
        _write_stand_in(lab, node, expected)
        poll(f"Prometheus sees {expected} GPUs on {node}",
             lambda: _gpus_seen(lab, node) == expected or None, timeout=10 * interval)
        poll(f"GpuMissing inactive for {node}",
             lambda: _alert(lab, "GpuMissing", node) is None or None, timeout=10 * interval)
        temps = _query(lab, f'DCGM_FI_DEV_GPU_TEMP{{node="{node}"}}')
        assert len(temps) == expected
        _write_stand_in(lab, node, expected - 1)
        alert = poll(f"GpuMissing for {node} (7 of 8)",
                     lambda: _alert(lab, "GpuMissing", node), timeout=10 * interval)
        # pending first: the rule holds for 5 minutes before it fires
        assert alert.labels["gpus_expected"] == str(expected)
    finally:
        _write_stand_in(lab, node, expected)


IB_FIXTURE = "/tmp/fleet-fixture-sys"
FETCH = ("import urllib.request as u; "
         "print(u.urlopen('http://127.0.0.1:19100/metrics').read().decode())")


def test_ib_collector_reads_a_fixture_sysfs_tree(lab: Lab) -> None:
    """node_exporter's InfiniBand collector (the one the role turns on) over a fixture
    /sys/class/infiniband, on a loopback port of an IB node (the lab has no HCA). The port
    has its hw_counters directory, as an mlx5 HCA's: Ubuntu 24.04's node_exporter (1.7)
    reports nothing for a port without one."""
    node = lab.with_role("infiniband")[0].hostname
    host = lab.host(node)
    dev = f"{IB_FIXTURE}/class/infiniband/mlx5_0"
    port_dir = f"{dev}/ports/1"
    setup = f"""set -e
rm -rf {IB_FIXTURE}
mkdir -p {port_dir}/counters {port_dir}/hw_counters
echo MT_0000000224 > {dev}/board_id
echo 20.31.1014 > {dev}/fw_ver
echo MT4123 > {dev}/hca_type
echo '1: DOWN' > {port_dir}/state
echo '3: Disabled' > {port_dir}/phys_state
echo '200 Gb/sec (4X HDR)' > {port_dir}/rate
for c in symbol_error link_downed port_rcv_errors; do echo 5 > {port_dir}/counters/$c; done
"""
    assert _script(lab, node, setup).returncode == 0
    defaults = host.file("/etc/default/prometheus-node-exporter").content_string
    assert "--collector.infiniband" in defaults
    scrape = f"""prometheus-node-exporter --path.sysfs={IB_FIXTURE} --collector.disable-defaults \
  --collector.infiniband --web.listen-address=127.0.0.1:19100 >/dev/null 2>&1 &
p=$!
for i in $(seq 100); do
  python3 -c "{FETCH}" 2>/dev/null && break
  sleep 0.2
done
kill $p
"""
    out = _script(lab, node, scrape).stdout
    assert 'node_infiniband_state_id{device="mlx5_0",port="1"} 1' in out, out[-2000:]
    assert 'node_infiniband_symbol_error_total{device="mlx5_0",port="1"} 5' in out
    sh(host, f"rm -rf {IB_FIXTURE}")


def _sinfo_idle(lab: Lab) -> dict[str, int]:
    out = sh(lab.host(CONTROLLER), "sinfo -h -N -o '%R %T'").stdout
    counts: dict[str, int] = {}
    for line in out.splitlines():
        partition, state = line.split()
        if state.rstrip("*~#!%$@^-") == "idle":
            counts[partition] = counts.get(partition, 0) + 1
    return counts


def _collector_idle(lab: Lab) -> dict[str, int]:
    r = podman_exec(lab, CONTROLLER, "systemctl", "start", "fleet-slurm-metrics.service")
    assert r.returncode == 0, r.stderr
    text = lab.host(CONTROLLER).file(SLURM_PROM).content_string
    counts = {}
    for line in text.splitlines():
        if line.startswith("fleet_slurm_nodes{") and 'state="idle"' in line:
            partition = line.split('partition="', 1)[1].split('"', 1)[0]
            counts[partition] = int(float(line.rsplit(" ", 1)[1]))
    return counts


def test_slurm_collector_idle_count_equals_sinfo(lab: Lab) -> None:
    assert lab.host(CONTROLLER).file(SLURM_COLLECTOR).exists

    def same() -> tuple[dict[str, int], dict[str, int]] | None:
        before = _sinfo_idle(lab)
        mine = _collector_idle(lab)
        return (mine, before) if mine == before == _sinfo_idle(lab) and mine else None

    mine, theirs = poll("the collector's idle nodes per partition equal sinfo's", same,
                        timeout=120, interval=2)
    assert sum(mine.values()) == sum(theirs.values()) > 0
    up = _query(lab, f'fleet_slurm_up{{node="{CONTROLLER}"}}')
    assert up and up[0]["value"][1] == "1"


def test_second_apply_changes_nothing_in_monitoring(lab: Lab) -> None:
    for node in lab.nodes:
        r = lab.second[node.hostname]
        monitoring_changes = [c for c in r.changes if "monitoring-" in c]
        assert not monitoring_changes, (node.hostname, monitoring_changes)
        assert not r.status.bad, (node.hostname, r.problems())
