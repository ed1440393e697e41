"""The collector's unit as the provisioning role renders it for the real head node
(tests/salt/snapshots/provisioning.json, kept equal to salt/ by the Salt render check): it
runs `fleet status --collect` into the directory `fleet status` (and so the fleet page)
reads by default, restarts when it stops, is verified before it starts, and passes
systemd-analyze verify."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from fleet.master import statedir
from support.cli import ROOT

SNAPSHOT = ROOT / "tests" / "salt" / "snapshots" / "provisioning.json"
SERVICE = "provisioning-status-file-managed-service"


def _states() -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in json.loads(SNAPSHOT.read_text())["states"]}


def test_the_service_collects_where_fleet_status_reads() -> None:
    states = _states()
    unit = states[SERVICE]["rendered"]
    argv = next(x for x in unit if x.startswith("ExecStart=")).split()
    assert argv[1:3] == ["status", "--collect"]
    cache = argv[argv.index("--status-state-dir") + 1]
    assert cache == statedir.STATUS.default == states[
        "provisioning-status-file-directory-cache"]["name"]
    assert f"ReadWritePaths={cache} -/var/cache/salt -/run/salt -/var/log/salt" in unit
    assert "Restart=always" in unit and "Nice=10" in unit
    running = states["provisioning-status-service-running-collector"]
    assert running["name"] == "fleet-status-collect.service"
    assert running["args"]["enable"] is True
    assert {"cmd": "provisioning-status-cmd-run-verify-unit"} in running["args"]["require"]


def test_the_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    assert shutil.which("systemd-analyze"), "systemd-analyze comes with every Debian/Ubuntu"
    text = "\n".join(_states()[SERVICE]["rendered"]) + "\n"
    # the checkout's fleet is not on this host: the same unit with this Python instead
    text = re.sub(r"^ExecStart=\S+", f"ExecStart={sys.executable}", text, flags=re.M)
    text = re.sub(r"^ConditionPathExists=\S+", f"ConditionPathExists={sys.executable}",
                  text, flags=re.M)
    (tmp_path / "fleet-status-collect.service").write_text(text)
    r = subprocess.run(["systemd-analyze", "verify", "--man=no",
                        "fleet-status-collect.service"], cwd=tmp_path, capture_output=True,
                       text=True, check=False)
    assert r.returncode == 0, r.stderr
