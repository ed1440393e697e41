"""`fleet mkv rebuild|rebalance ARRAY` through the lab's real master, on head-01's real
mkv master unit: the unit is stopped, mkv runs with the array's own flags as the unit's
user, and the unit is active again after. Without MKV_BINARY the unit's binary is the
lab's stand-in (fleet.lab.lab.MKV_STUB, named so in its output), which prints what it was
given for a maintenance verb; with a real minikeyvalue the run is real."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from labtools import ROOT, Lab, sh

from fleet.inventory.load import load_inventory
from fleet.mkv.flags import array_flags

ARRAY = "training"  # the lab's one array (lab/overlay.yaml removes the others)
FLEET = [sys.executable, "-m", "fleet"]


def fleet_mkv(lab: Lab, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FLEET, "mkv", *args, "-i", str(ROOT / "inventory.yaml"),
         *lab.paths.overlay_args()],
        capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)


def main_pid(host: object, unit: str) -> int:
    return int(sh(host, f"systemctl show -p MainPID --value {unit}").stdout.strip())


@pytest.mark.parametrize("verb", ["rebuild", "rebalance"])
def test_mkv_maintenance_runs_with_the_arrays_flags(lab: Lab, verb: str) -> None:
    inv = load_inventory(ROOT / "inventory.yaml", lab.paths.overlays)
    flags = array_flags(inv, ARRAY)
    head = lab.host(flags.master)
    assert head.service(flags.unit).is_running
    pid_before = main_pid(head, flags.unit)
    r = fleet_mkv(lab, verb, ARRAY, "--salt-config", str(lab.paths.lab / "etc" / "salt"),
                  "--json")
    assert r.returncode == 0, r.stderr + r.stdout
    report = json.loads(r.stdout)
    binary = report["argv"][0]
    assert report["argv"] == flags.argv(binary, verb)
    assert report["restarted"] is True
    if lab.mkv_kind == "stub":
        assert f"stub mkv ran: {' '.join(report['argv'][1:])}" in report["stdout"]
    assert head.service(flags.unit).is_running
    pid_after = main_pid(head, flags.unit)
    assert pid_after not in (0, pid_before), "the master unit was not stopped and started"


def test_mkv_refuses_a_unit_whose_flags_are_not_the_inventorys(lab: Lab) -> None:
    inv = load_inventory(ROOT / "inventory.yaml", lab.paths.overlays)
    flags = array_flags(inv, ARRAY)
    head = lab.host(flags.master)
    dropin = f"/run/systemd/system/{flags.unit}.d"
    stale = " ".join(flags.argv("/usr/local/bin/mkv", "server")).replace(
        f"-replicas {flags.replicas}", "-replicas 3")
    sh(head, f"mkdir -p {dropin} && printf '[Service]\\nExecStart=\\nExecStart={stale}\\n' "
             f"> {dropin}/stale.conf && systemctl daemon-reload")
    try:
        r = fleet_mkv(lab, "rebuild", ARRAY, "--salt-config",
                      str(lab.paths.lab / "etc" / "salt"))
        assert r.returncode == 3, r.stderr + r.stdout
        assert "-replicas 3" in r.stderr and "apply the highstate" in r.stderr
        assert head.service(flags.unit).is_running  # never stopped
    finally:
        sh(head, f"rm -rf {dropin} && systemctl daemon-reload")
