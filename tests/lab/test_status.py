"""`fleet status` on the running lab: the real CLI against the lab's Salt master
(its key lists, `salt-run manage.alived`, and test.ping for --ping), head-01's slurmctld
(scontrol through podman exec), head-01's PXE links (`fleet-lab pxe status` there,
--pxe-command), the FAKE Redfish BMC of every lab node but head-01 (sushy-tools' emulator
and the FAKE hardware behind it, as the lab reinstall tests: tests/lab/reinstall_rig.py;
head-01, the provisioning host, has none there, so it is not targeted), and the results
of a real `fleet apply` run just before.

- Every node: power on (what its fake BMC says), boot mode local, key accepted, minion
  connected (the master's own view), Slurm idle (the compute nodes), the last apply as
  `fleet apply` reported it; exit 0.
- After `fleet pxe set tbox-002 install` (on head-01) and tbox-001's salt-minion stopped:
  both first, as problems (boot mode install; the minion not connected, as the master
  sees it, and silent to `--ping`'s test.ping); exit 5.

Restored in `finally`: tbox-002's boot mode local, tbox-001's salt-minion started and
answering."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from labtools import ROOT, Lab, podman_exec, poll, sinfo_node
from reinstall_rig import CONTROLLER, PODMAN, rig_up

SILENT, INSTALL = "tbox-001", "tbox-002"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "tools")}


def fleet(lab: Lab, *args: str, timeout: float = 1800) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "fleet", *args, "--json", "-i", str(ROOT / "inventory.yaml"),
         *lab.paths.overlay_args(), "--salt-config", str(lab.paths.salt_etc)],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=_env(), check=False)
    assert proc.stdout.strip().startswith("{"), (proc.returncode, proc.stderr[-3000:])
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def head(lab: Lab, *argv: str) -> subprocess.CompletedProcess[str]:
    return podman_exec(lab, CONTROLLER, *argv, timeout=120)


def slurm_state(lab: Lab, node: str) -> str:
    return sinfo_node(lab, node, "%T")


def answers(lab: Lab, node: str) -> bool:
    return bool(lab.salt(node, "test.ping", "-t", "10", timeout=120).get(node) is True)


def test_status_shows_every_source_then_puts_a_silent_minion_and_an_armed_install_first(
        lab: Lab, tmp_path: Path) -> None:
    nodes = [n.hostname for n in lab.nodes if "provisioning" not in n.roles]
    compute = {n.hostname for n in lab.with_role("slurm.compute")}
    target = ",".join(nodes)
    apply_state = tmp_path / "apply"
    container = lab.plan.node(CONTROLLER).container
    for n in compute:  # the known start: an earlier lab test may leave a node drained
        if "drain" in slurm_state(lab, n):
            head(lab, "scontrol", "update", f"NodeName={n}", "State=RESUME")
    poll("the compute nodes idle", lambda: all(slurm_state(lab, n) == "idle"
                                               for n in compute), timeout=180)
    rc, applied, err = fleet(lab, "apply", target, "--state-dir", str(apply_state))
    assert rc == 0, (applied, err[-3000:])
    want_apply = {n["node"]: n["status"] for n in applied["nodes"]}
    try:
        with rig_up(lab, tmp_path / "rig") as rig:
            status = [
                "status", target, "--live", "--no-alerts", "--apply-state-dir", str(apply_state),
                "--health-state-dir", str(tmp_path / "health"),
                "--reinstall-state-dir", str(tmp_path / "reinstall"),
                "--rollout-state-dir", str(tmp_path / "rollout"),
                "--slurm-command", f"{PODMAN} {container}",
                "--pxe-command", f"{PODMAN} -i {container} fleet-lab",
                "--secrets", str(rig.work / "secrets"), "--bmc-scheme", "http",
                "--bmc-address", ",".join(f"{n}=127.0.0.1:{rig.bmc_ports[n]}"
                                          for n in nodes)]
            rc, doc, err = fleet(lab, *status, timeout=600)
            (ROOT / ".lab" / "status.json").write_text(json.dumps(doc, indent=2))
            assert rc == 0, (doc, err[-3000:])
            got = {n["node"]: n for n in doc["nodes"]}
            assert sorted(got) == sorted(nodes)
            for n, row in got.items():
                assert row["status"] == "ok", row
                assert row["power"] == {"state": "on", "error": None}, row
                assert row["boot"] == {"mode": "local", "error": None}, row
                # the master's own view of its connections (no job reached a minion)
                assert (row["key"], row["minion"]) == ("accepted", "connected"), row
                assert row["apply"]["status"] == want_apply[n], row
                if n in compute:
                    assert row["slurm"]["state"] == "IDLE", row
                else:
                    assert row["slurm"] is None, row

            armed = head(lab, "fleet-lab", "pxe", "set", INSTALL, "install")
            assert armed.returncode == 0, armed.stderr
            podman_exec(lab, SILENT, "systemctl", "stop", "salt-minion")
            rc, doc, err = fleet(lab, *status, timeout=600)
            (ROOT / ".lab" / "status-problems.json").write_text(json.dumps(doc, indent=2))
            assert rc == 5, (doc, err[-3000:])
            first = {n["node"]: n for n in doc["nodes"][:2]}
            assert sorted(first) == sorted([SILENT, INSTALL]), doc["nodes"]
            assert first[SILENT]["problems"] == ["minion not connected to the master"]
            assert first[INSTALL]["boot"]["mode"] == "install"
            assert first[INSTALL]["problems"][0].startswith("boot mode install")
            assert all(n["status"] == "ok" for n in doc["nodes"][2:]), doc["nodes"]
            assert doc["counts"] == {"ok": len(nodes) - 2, "problem": 2, "unknown": 0}
            # --ping: a test.ping job through every minion, the stopped one silent
            rc, doc, err = fleet(lab, *status, "--ping", timeout=600)
            assert rc == 5, (doc, err[-3000:])
            got = {n["node"]: n for n in doc["nodes"]}
            assert got[SILENT]["problems"] == ["minion does not answer test.ping"]
            assert {got[n]["minion"] for n in nodes if n != SILENT} == {"answers"}, got
    finally:
        head(lab, "fleet-lab", "pxe", "set", INSTALL, "local")
        podman_exec(lab, SILENT, "systemctl", "start", "salt-minion")
        poll(f"{SILENT}'s minion answering", lambda: answers(lab, SILENT), timeout=180)
