"""The provisioning role's page states as the lowstate snapshot renders them for the real
head node (tests/salt/snapshots/provisioning.json, kept equal to salt/ by the Salt render
check): the timer's service writes the directory nginx serves, on the management address,
and both units pass systemd-analyze verify."""

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


def _states() -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in json.loads(SNAPSHOT.read_text())["states"]}


def test_the_timer_writes_what_nginx_serves_on_the_management_address() -> None:
    states = _states()
    out = states["provisioning-page-file-directory-out"]["name"]
    assert out == statedir.PAGE.default  # `fleet page`'s own default: the one definition
    service = states["provisioning-page-file-managed-service"]["rendered"]
    exec_start = next(line for line in service if line.startswith("ExecStart="))
    argv = exec_start.removeprefix("ExecStart=").split()
    assert argv[1] == "page" and argv[argv.index("--out") + 1] == out
    assert "--status" not in argv  # it collects the status itself (fleet status)
    site = states["provisioning-pxe-file-managed-nginx-site"]["rendered"]
    page = site[next(i for i, line in enumerate(site) if line.startswith("# The fleet page")):]
    assert f"  root {out};" in page
    site_pillar = (ROOT / "pillar" / "site.sls").read_text()
    address = re.search(r"provisioning:\n    address: (\S+)", site_pillar)
    assert address, "pillar/site.sls: no site:provisioning:address"
    listens = [line.strip() for line in page if line.strip().startswith("listen ")]
    assert listens == [f"listen {address.group(1)}:8080;"]
    assert "  deny all;" in page
    timer = states["provisioning-page-service-running-timer"]
    assert timer["name"] == "fleet-page.timer" and timer["args"]["enable"] is True


def test_the_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    assert shutil.which("systemd-analyze"), "systemd-analyze comes with every Debian/Ubuntu"
    states = _states()
    for sid in ("provisioning-page-file-managed-service", "provisioning-page-file-managed-timer"):
        name = Path(states[sid]["name"]).name
        text = "\n".join(states[sid]["rendered"]) + "\n"
        # the checkout's fleet is not on this host: the same unit with this Python instead
        text = re.sub(r"^ExecStart=\S+", f"ExecStart={sys.executable}", text, flags=re.M)
        text = re.sub(r"^ConditionPathExists=\S+", f"ConditionPathExists={sys.executable}",
                      text, flags=re.M)
        (tmp_path / name).write_text(text)
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", "fleet-page.timer",
                        "fleet-page.service"], cwd=tmp_path, capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stderr
