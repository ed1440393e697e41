"""`fleet burnin run` through the real Salt master of the swarm: the runner travels in the
command line to a real minion (a process on this host, so stress-ng, memtester and fio run
here, at a few seconds each), the node's JSON answer is recorded, and `fleet burnin
status` judges it. The profile's burn-in (as the "receive a rack" runbook sets one, at
seconds) and the node's burn-in state come from an overlay (a node in service would be
drained through Slurm first, which the swarm has not). The GPU check is left out: this
host has no GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from fleet.inventory.load import load_inventory
from fleet.inventory.schema.hardware import BURNIN_CHECKS
from support import swarmconf
from support.gpustandin import SEVEN_GPUS, SEVEN_GPUS_REASON
from support.swarm import Swarm

CHECKS = ["cpu-stress", "memtester", "disk-verify", "smart"]


def only(**checks: dict[str, int]) -> dict[str, dict[str, int] | None]:
    """A profile's ``burnin:`` of exactly these checks in an overlay: a merge patch merges
    mappings, so every other check of the site's profile is deleted (null)."""
    return {**dict.fromkeys(BURNIN_CHECKS), **checks}


def fleet(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleet", *argv], capture_output=True,
                          text=True, timeout=900, cwd=Path(swarmconf.ROOT), check=False)


def test_burnin_runs_on_the_node_through_salt_and_is_judged(swarm: Swarm,
                                                            tmp_path: Path) -> None:
    inventory = swarmconf.ROOT / "inventory.yaml"
    inv = load_inventory(inventory)
    node = next(i for i in swarm.ids if inv.nodes[i].profile_name == "tinybox-pro")
    profile = inv.nodes[node].profile_name
    overlay = tmp_path / "short.yaml"
    overlay.write_text(yaml.safe_dump({
        "nodes": {node: {"state": "burn-in"}},
        "profiles": {profile: {"burnin": only(**{
            "cpu-stress": {"seconds": 3}, "memtester": {"seconds": 0, "mb": 16},
            "disk-verify": {"seconds": 3, "mb": 16}, "smart": {"seconds": 0},
            "gpu-present": {"seconds": 0}})}}}))
    common = ["-i", str(inventory), "--overlay", str(overlay), "--results",
              str(tmp_path / "results")]
    run = fleet("burnin", "run", node, "--checks", ",".join(CHECKS), "--json", *common,
                "--salt-config", str(swarm.config_dir))
    assert run.returncode == 0, run.stderr[-3000:]
    (row,) = json.loads(run.stdout)["nodes"]
    assert row["node"] == node and row["error"] is None, row
    ran = {r["check"]: r for r in row["ran"]}
    assert sorted(ran) == sorted(CHECKS) and all(r["passed"] for r in ran.values()), ran
    assert ran["cpu-stress"]["figures"]["bogo_ops_s"] > 0  # stress-ng really ran
    assert ran["disk-verify"]["figures"]["write_mib_s"] > 0  # fio really wrote and verified
    kept = json.loads((tmp_path / "results" / f"{node}.json").read_text())
    assert sorted(kept) == sorted(CHECKS)
    # the master's verdict over what was kept: the profile's GPU check is still to run
    status = fleet("burnin", "status", node, "--json", *common)
    (st,) = json.loads(status.stdout)["nodes"]
    assert (st["burnin"], st["done"], st["total"]) == ("pending", 4, 5), st



def test_a_missing_gpu_and_a_baseline_outlier_leave_the_node_in_maintenance(
        swarm: Swarm, tmp_path: Path) -> None:
    """The real runner on a real minion: gpu-present against a STAND-IN nvidia-smi that
    lists 7 GPUs, one at x8; link-speed on this host's real sysfs, which has no NIC of the
    node's planned MAC; and the real stress-ng, whose figure is judged against a baseline of
    three other nodes of the profile whose results are STAND-INS (recorded through
    `fleet burnin record`, as the runner's JSON, at a rate no machine reaches). Both fail
    the node; `fleet burnin finish` moves it to maintenance with the first failing check
    as its reason, in a copy of inventory.yaml."""
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text((swarmconf.ROOT / "inventory.yaml").read_text(encoding="utf-8"),
                         encoding="utf-8")
    inv = load_inventory(inventory)
    node = next(i for i in swarm.ids if inv.nodes[i].profile_name == "tinybox-pro")
    profile = inv.nodes[node].profile_name
    peers = [h for h, n in inv.nodes.items() if n.profile_name == profile and h != node][:3]
    # the short burn-in, and (after it) the nodes in burn-in: `fleet status` reads the
    # inventory copy that `finish` edits without the second
    short = tmp_path / "short.yaml"
    short.write_text(yaml.safe_dump({"profiles": {profile: {"burnin": only(**{
        "cpu-stress": {"seconds": 3, "tolerance_percent": 10},
        "link-speed": {"seconds": 0}, "gpu-present": {"seconds": 0}})}}}))
    overlay = tmp_path / "in-burnin.yaml"
    overlay.write_text(yaml.safe_dump({"nodes": {h: {"state": "burn-in"}
                                                 for h in (node, *peers)}}))
    common = ["-i", str(inventory), "--overlay", str(short), "--overlay", str(overlay),
              "--results", str(tmp_path / "results")]
    shim = swarm.root / "shim" / "nvidia-smi"  # on the minions' PATH (support.swarm)
    shim.write_text(SEVEN_GPUS)
    shim.chmod(0o755)
    try:
        for h in peers:
            (tmp_path / f"{h}.json").write_text(json.dumps({
                "check": "cpu-stress", "passed": True, "figures": {"bogo_ops_s": 1e9},
                "started": 1.0, "seconds": 3.0}))
            rec = fleet("burnin", "record", h, "--result", str(tmp_path / f"{h}.json"),
                        *common)
            assert rec.returncode == 0, rec.stderr
        run = fleet("burnin", "run", node, "--checks", "cpu-stress,link-speed,gpu-present",
                    "--json",
                    *common, "--salt-config", str(swarm.config_dir))
    finally:
        shim.unlink()
    (row,) = json.loads(run.stdout)["nodes"]
    ran = {r["check"]: r for r in row["ran"]}
    assert ran["gpu-present"]["passed"] is False, ran
    assert SEVEN_GPUS_REASON in ran["gpu-present"]["reason"], ran
    assert ran["gpu-present"]["figures"]["pcie_width_min"] == 8.0, ran
    assert ran["link-speed"]["passed"] is False, ran
    assert f"prov: no ethernet port with {inv.nodes[node].mac}" in \
        ran["link-speed"]["reason"], ran
    assert ran["cpu-stress"]["passed"] is True, ran  # stress-ng itself verified its work
    status = fleet("burnin", "status", node, "--json", *common)
    (st,) = json.loads(status.stdout)["nodes"]
    assert st["burnin"] == "failed", st
    failures = " | ".join(st["failures"])
    assert "gpu-present" in failures, failures
    assert "cpu-stress: bogo_ops_s" in failures and "against the baseline 1e+09" in failures, \
        failures
    done = fleet("burnin", "finish", node, "--json", *common)
    ((h, to, why),) = [(o["node"], o["to"], o["why"]) for o in
                       json.loads(done.stdout)["outcomes"]]
    assert (h, to) == (node, "maintenance"), done.stdout + done.stderr
    entry = next(line for line in inventory.read_text().splitlines()
                 if line.startswith(f"  {node}:"))
    assert "state: maintenance" in entry and any(
        c in entry for c in ("gpu-present", "cpu-stress", "link-speed")), (entry, why)
    # the operator's view of it: `fleet status` (live, through the same master) gives the
    # node's stage as failed, the failing check as its reason (Slurm: none in the swarm)
    state = tmp_path / "state"
    shown = subprocess.run(
        [sys.executable, "-m", "fleet", "status", node, "--json", "--live", "--no-power",
         "--no-alerts", "--salt-config", str(swarm.config_dir), "-i", str(inventory),
         "--overlay", str(short), "--burnin-results", str(tmp_path / "results"),
         "--discover-reports", str(state / "d"), "--pxe-state", str(state / "p"),
         *(f"--{d}-state-dir={state / d}"
           for d in ("apply", "health", "reinstall", "rollout", "status")),
         "--slurm-command", "false", "--salt-timeout", "20"],
        capture_output=True, text=True, timeout=600, cwd=Path(swarmconf.ROOT), check=False)
    (row,) = json.loads(shown.stdout)["nodes"]
    check = why.removeprefix("burn-in ").split(":", 1)[0]
    assert (row["state"], row["stage"]["stage"], row["stage"]["summary"]) == (
        "maintenance", "failed", f"failed: {check}"), row
    assert row["stage"]["reason"] == why.removeprefix("burn-in "), row
    assert row["stage"]["check"] == check and check == st["failures"][0].split(":", 1)[0], row
