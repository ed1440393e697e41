"""The alert rules rendered from the real inventory, through the real promtool.

Each alert is tested against one healthy baseline (a GPU node, a storage node, the
controller's probes, as their targets label them): the baseline fires nothing, and the
baseline with one series made unhealthy fires exactly that alert, for that node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import promtool
import pytest

from fleet.inventory.model import Inventory
from fleet.render import monitoring

STEP = "1m"
SAMPLES = 1600  # 26 h and a bit at one sample a minute
EVAL = "20m"
LONG_EVAL = "25h"  # past the drained threshold of 24 h


def _target(inv: Inventory, job: str, node: str, **match: str) -> dict[str, str]:
    """The labels Prometheus gives a series of ``node``'s target in ``job``."""
    for group in monitoring.targets(inv)[job]:
        labels = group["labels"]
        if labels["node"] == node and all(labels.get(k) == v for k, v in match.items()):
            return {"job": job, "instance": group["targets"][0], **labels}
    raise AssertionError(f"no {job} target of {node}")


def _sel(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _const(value: float) -> str:
    return f"{value}x{SAMPLES}"


TRACKS_TIME = f"0+60x{SAMPLES}"  # a Unix time that keeps up with the clock: fresh


def baseline(inv: Inventory) -> dict[str, str]:
    """series selector -> values: a healthy GPU node, storage node and controller."""
    gpu = _target(inv, "node", "tbox-001")
    stor = _target(inv, "node", "stor-001")
    head = _target(inv, "node", "head-01")
    assert gpu["gpus_expected"] == "8" and gpu["ib_ports"] == "1"
    port = {"device": "mlx5_0", "port": "1"}
    s: dict[str, str] = {
        _sel("up", gpu): _const(1), _sel("up", stor): _const(1), _sel("up", head): _const(1),
        _sel("fleet_gpus_visible", gpu): _const(8),
        _sel("node_filesystem_avail_bytes", {**gpu, "mountpoint": "/", "fstype": "ext4"}):
            _const(50),
        _sel("node_filesystem_size_bytes", {**gpu, "mountpoint": "/", "fstype": "ext4"}):
            _const(100),
        _sel("node_filesystem_avail_bytes",
             {**stor, "mountpoint": "/srv/mkv/sv00", "fstype": "xfs"}): _const(50),
        _sel("node_filesystem_size_bytes",
             {**stor, "mountpoint": "/srv/mkv/sv00", "fstype": "xfs"}): _const(100),
        _sel("node_timex_offset_seconds", gpu): _const(0.001),
        _sel("node_timex_sync_status", gpu): _const(1),
        _sel("node_textfile_mtime_seconds",
             {**gpu, "file": "/var/lib/prometheus/node-exporter/fleet-gpu.prom"}): TRACKS_TIME,
        # another package's file, rewritten rarely: not fleet's to watch
        _sel("node_textfile_mtime_seconds",
             {**gpu, "file": "/var/lib/prometheus/node-exporter/apt.prom"}): _const(0),
        _sel("fleet_gpu_xid_errors_total", {**gpu, "gpu": "0"}): _const(0),
        _sel("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", {**gpu, "gpu": "0"}): _const(0),
        _sel("DCGM_FI_DEV_GPU_TEMP", {**gpu, "gpu": "0"}): _const(60),
        _sel("node_infiniband_state_id", {**gpu, **port}): _const(4),
        _sel("fleet_slurm_up", head): _const(1),
        _sel("fleet_slurm_node_drained_since_seconds",
             {**head, "slurm_node": "tbox-002", "reason": "fan"}): TRACKS_TIME,
    }
    for counter in monitoring.IB_ERRORS:
        s[_sel(f"node_infiniband_{counter}", {**gpu, **port})] = _const(3)
    for job, node in (("slurmctld", "head-01"), ("mkv_volume", "stor-001"),
                      ("mkv_master", "head-01")):
        extra = {"array": "training"} if job.startswith("mkv") else {}
        s[_sel("probe_success", _target(inv, job, node, **extra))] = _const(1)
    return s


def _find(series: dict[str, str], prefix: str) -> str:
    (key,) = [k for k in series if k.startswith(prefix)]
    return key


# alert -> (series to change: its name and a label that picks it, new values, eval time,
# the node the alert names)
CASES: dict[str, tuple[str, str | None, str, str]] = {
    "NodeDown": ('up{', "tbox-001", _const(0), EVAL),
    "FilesystemFull": ('node_filesystem_avail_bytes{', "mountpoint=\"/\"", _const(10), EVAL),
    "MkvVolumeFull": ('node_filesystem_avail_bytes{', "sv00", _const(15), EVAL),
    "ClockDrift": ("node_timex_offset_seconds{", None, _const(-0.5), EVAL),
    "TextfileCollectorStale": ("node_textfile_mtime_seconds{", "fleet-gpu", _const(0), EVAL),
    "GpuMissing": ("fleet_gpus_visible{", None, _const(7), EVAL),
    "GpuMetricsMissing": ("fleet_gpus_visible{", None, "", EVAL),
    "GpuXidErrors": ("fleet_gpu_xid_errors_total{", None, f"0x10 2x{SAMPLES}", EVAL),
    "GpuEccUncorrected": ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{", None, f"0x12 1x{SAMPLES}", EVAL),
    "GpuHot": ("DCGM_FI_DEV_GPU_TEMP{", None, _const(97), EVAL),
    "IbPortDown": ("node_infiniband_state_id{", None, _const(1), EVAL),
    "IbPortMissing": ("node_infiniband_state_id{", None, "", EVAL),
    "IbPortErrors": ("node_infiniband_symbol_error_total{", None, f"0+2x{SAMPLES}", EVAL),
    "SlurmControllerDown": ('probe_success{', "slurmctld", _const(0), EVAL),
    "SlurmNodesDrainedLong": ("fleet_slurm_node_drained_since_seconds{", None, _const(0),
                              LONG_EVAL),
    "MkvVolumeDown": ('probe_success{', "mkv_volume", _const(0), EVAL),
    "MkvMasterDown": ('probe_success{', "mkv_master", _const(0), EVAL),
}
NAMED = {"NodeDown": "tbox-001", "FilesystemFull": "tbox-001", "MkvVolumeFull": "stor-001",
         "SlurmControllerDown": "head-01", "SlurmNodesDrainedLong": "head-01",
         "MkvVolumeDown": "stor-001", "MkvMasterDown": "head-01"}


def _changed(series: dict[str, str], alert: str) -> dict[str, str]:
    prefix, pick, values, _ = CASES[alert]
    keys = [k for k in series if k.startswith(prefix) and (pick is None or pick in k)]
    assert len(keys) == 1, (alert, keys)
    out = dict(series)
    if values:
        out[keys[0]] = values
    else:
        del out[keys[0]]
    return out


def _firing(alerts: list[str], node_of: dict[str, str]) -> list[dict[str, Any]]:
    return [{"labels": f'{{alertname="{a}",node="{node_of.get(a, "tbox-001")}"}}', "value": 1}
            for a in sorted(alerts)]


def _group(series: dict[str, str], eval_time: str,
           firing: list[dict[str, Any]]) -> dict[str, Any]:
    return {"interval": STEP,
            "input_series": [{"series": k, "values": v} for k, v in series.items()],
            "promql_expr_test": [{
                "expr": 'count by (alertname, node) (ALERTS{alertstate="firing"})',
                "eval_time": eval_time, "exp_samples": firing}]}


def _run_tests(tmp_path: Path, inv: Inventory, groups: list[dict[str, Any]]) -> str:
    promtool.dump(tmp_path / "rules.yml", monitoring.rules(inv))
    promtool.dump(tmp_path / "tests.yml", {"rule_files": ["rules.yml"],
                                            "evaluation_interval": STEP, "tests": groups})
    proc = promtool.run("test", "rules", tmp_path / "tests.yml")
    return proc.stdout + proc.stderr if proc.returncode else ""


def test_rules_pass_promtool_check(tmp_path: Path, site_inv: Inventory) -> None:
    path = promtool.dump(tmp_path / "rules.yml", monitoring.rules(site_inv))
    proc = promtool.run("check", "rules", path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    n = sum(len(g["rules"]) for g in monitoring.rules(site_inv)["groups"])
    assert f"SUCCESS: {n} rules found" in proc.stdout


def test_every_alert_has_a_case(site_inv: Inventory) -> None:
    names = {r["alert"] for g in monitoring.rules(site_inv)["groups"]
             for r in g["rules"]}
    assert names == set(CASES), f"alerts without a promtool case: {names - set(CASES)}"


def test_healthy_baseline_fires_nothing(tmp_path: Path, site_inv: Inventory) -> None:
    series = baseline(site_inv)
    failure = _run_tests(tmp_path, site_inv, [_group(series, EVAL, []),
                                              _group(series, LONG_EVAL, [])])
    assert not failure, failure


@pytest.mark.parametrize("alert", sorted(CASES))
def test_each_alert_fires_on_its_unhealthy_series_only(tmp_path: Path, site_inv: Inventory,
                                                       alert: str) -> None:
    series = _changed(baseline(site_inv), alert)
    failure = _run_tests(tmp_path, site_inv,
                         [_group(series, CASES[alert][3], _firing([alert], NAMED))])
    assert not failure, failure


def test_a_broken_rule_is_caught(tmp_path: Path, site_inv: Inventory) -> None:
    """The harness fails when an alert does not fire (it is not silently passing)."""
    rules = monitoring.rules(site_inv)
    for group in rules["groups"]:
        for rule in group["rules"]:
            if rule["alert"] == "GpuMissing":
                rule["expr"] = rule["expr"].replace("< 8", "< 7")
    promtool.dump(tmp_path / "rules.yml", rules)
    series = _changed(baseline(site_inv), "GpuMissing")
    promtool.dump(tmp_path / "tests.yml", {
        "rule_files": ["rules.yml"], "evaluation_interval": STEP,
        "tests": [_group(series, EVAL, _firing(["GpuMissing"], NAMED))]})
    proc = promtool.run("test", "rules", tmp_path / "tests.yml")
    assert proc.returncode != 0 and "FAILED" in proc.stdout + proc.stderr
