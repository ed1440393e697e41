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
from support import swarmconf
from support.swarm import Swarm

CHECKS = ["cpu-stress", "memtester", "disk-verify", "smart"]


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
        "profiles": {profile: {"burnin": {
            "cpu-stress": {"seconds": 3}, "memtester": {"seconds": 0, "mb": 16},
            "disk-verify": {"seconds": 3, "mb": 16}, "smart": {"seconds": 0},
            "gpu-present": {"seconds": 0}}}}}))
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
