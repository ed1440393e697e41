"""What the ``fleet cabling`` tests share: lldpcli's JSON as lldpd 1.0.16 prints it (the
shape of ``lldpcli -f json show neighbors`` on a node hearing a switch that names its
port ``ethernet1/1/N``), and a STAND-IN for the ``salt`` CLI (no Salt master runs here): a
script that answers ``cmd.run_all`` for the minions listed with ``-L`` from a table the
test writes, as ``--out=json`` prints it (one object per minion), and logs each call."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.cli import ROOT, SMALL
from support.saltstandin import calls, write_salt
from support.venvbin import venv_bin

ALL = ["head-01", "gpu-01", "gpu-02", "gpu-03", "gpu-04", "stor-1", "stor-2"]
# the small inventory's prov ports on sw1
PORTS = {"head-01": 64, "gpu-01": 1, "gpu-02": 2, "gpu-03": 3, "gpu-04": 4, "stor-1": 10,
         "stor-2": 11}


def neighbour(switch: str, port: str, mac: str = "3c:2c:30:a3:00:01") -> dict[str, Any]:
    return {"via": "LLDP", "rid": "1", "age": "0 day, 00:01:08",
            "chassis": {switch: {"id": {"type": "mac", "value": mac},
                                 "descr": "Dell EMC Networking OS10 Enterprise",
                                 "capability": [{"type": "Bridge", "enabled": True}]}},
            "port": {"id": {"type": "ifname", "value": port}, "descr": "", "ttl": "120"}}


def lldp_doc(*links: tuple[str, str, str]) -> str:
    """lldpcli's JSON for (interface, switch, port name) links: an object for one, a list
    of one-key objects for more, ``{"lldp": {}}`` for none (lldpd issue 236)."""
    items = [{iface: neighbour(sw, port)} for iface, sw, port in links]
    if not items:
        return json.dumps({"lldp": {}}, indent=2)
    body = items[0] if len(items) == 1 else items
    return json.dumps({"lldp": {"interface": body}}, indent=2)


def run_all(stdout: str, retcode: int = 0, stderr: str = "") -> dict[str, Any]:
    return {"pid": 4242, "retcode": retcode, "stdout": stdout, "stderr": stderr}


def cabled_as_inventoried() -> dict[str, Any]:
    return {n: run_all(lldp_doc(("prov", "sw1", f"ethernet1/1/{p}"))) for n, p in PORTS.items()}


@dataclass
class Site:
    tmp: Path
    answers: dict[str, Any] = field(default_factory=cabled_as_inventoried)
    salt_broken: bool = False
    salt_unreachable: bool = False

    def write_standin(self) -> Path:
        bin_dir = venv_bin(self.tmp / "standin-venv")  # the salt STAND-IN beside python
        write_salt(bin_dir, self.tmp, "cmd.run_all", self.answers, broken=self.salt_broken,
                   unreachable=self.salt_unreachable)
        return bin_dir

    def calls(self) -> list[list[str]]:
        """The salt stand-in's calls, each argv without the program's name."""
        return [c[1:] for c in calls(self.tmp)]

    def run(self, *args: str, json_out: bool = True) -> tuple[int, str, str]:
        """``fleet cabling ARGS`` on the small inventory, as a separate process."""
        bin_dir = self.write_standin()
        conf = self.tmp / "salt-conf"
        conf.mkdir(exist_ok=True)
        argv = [str(bin_dir / "python"), "-m", "fleet", "cabling", "-i", str(SMALL),
                "--salt-config", str(conf), "--salt-timeout", "7",
                *(["--json"] if json_out else []), *args]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "tools"),
               "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        proc = subprocess.run(argv, cwd=self.tmp, env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        return proc.returncode, proc.stdout, proc.stderr
