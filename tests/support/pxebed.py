"""The PXE test bed's data and helpers shared by conftest.py and the tests (a module of
its own: `conftest` is a name every test directory uses)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleet.inventory.model import Inventory
from support import pxelab
from support.pxelab import Guest

ENABLED = os.environ.get("FLEET_PXE") == "1"
SKIP_REASON = ("PXE end-to-end test NOT RUN: set FLEET_PXE=1 (as root, with the packages of "
               "tools/install-pxe-deps.sh) or run `make test-pxe`; it boots QEMU guests "
               "under TCG for several minutes")
SMALL = pxelab.ROOT / "tests" / "fixtures" / "small.yaml"
DEBIAN_IMAGE = "debian-12"
# an image whose initrd the bed withholds until GRUB has failed to load it once: the
# storage group's (stor-2 is armed, stor-1 never is)
LATE_IMAGE = "debian-12-late"
# an image whose initrd never exists: the group of the bed's own node spare-01 (BIOS iPXE)
ABSENT_IMAGE = "debian-12-absent"
UNKNOWN_MAC = "52:54:00:ff:ff:01"
# the install guests must reach the installer's preseed fetch within this (TCG, 2 cores:
# about 200 s on a quiet machine, 410 s at load average 20)
INSTALL_TIMEOUT = float(os.environ.get("FLEET_PXE_TIMEOUT", "540"))


def overlay_text(work: Path) -> str:
    return json.dumps(_overlay(work))


def _image(kernel: str, initrd: str) -> dict[str, str]:
    return {"type": "debian-preseed", "kernel": f"images/{kernel}/linux",
            "initrd": f"images/{initrd}/initrd.gz", "mirror": "http://10.1.0.10/debian"}


def _overlay(work: Path) -> dict[str, Any]:
    return {
        "site": {
            "pxe_root": str(work / "pxe"),
            "pxe_state": str(work / "state"),
            "images": {DEBIAN_IMAGE: _image(DEBIAN_IMAGE, DEBIAN_IMAGE)},
        },
        "node_groups": {"part-a": {"image": DEBIAN_IMAGE}, "part-b": {"image": DEBIAN_IMAGE}},
    }


def boot_overlay_text(work: Path) -> str:
    """The boot tests' overlay: also the storage group on LATE_IMAGE, and a node of the
    bed's own (spare-01, no roles) on ABSENT_IMAGE."""
    o = _overlay(work)
    o["site"]["images"].update({name: _image(DEBIAN_IMAGE, name)
                                for name in (LATE_IMAGE, ABSENT_IMAGE)})
    o["node_groups"]["storage"] = {"image": LATE_IMAGE}
    o["node_groups"]["spare"] = {
        "hosts": "spare-01", "profile": "storage", "roles": [], "image": ABSENT_IMAGE,
        "nics": {"prov": {"network": "prov", "ip_base": "10.1.0.200", "switch": "sw1",
                          "first_port": 20},
                 "bmc": {"network": "bmc", "ip_base": "10.0.0.180", "switch": "mgmt1",
                         "first_port": 20}}}
    o["nodes"] = {"spare-01": {"serial": "SPARE001", "mac": "52:54:00:00:00:c9",
                               "bmc_mac": "52:54:00:01:00:c9"}}
    return json.dumps(o)


@dataclass
class Bed:
    work: Path
    inv: Inventory
    accel: str
    dnsmasq_log: Path
    http_log: Path
    guests: dict[str, Guest] = field(default_factory=dict)
    started: dict[str, float] = field(default_factory=dict)
    done: dict[str, float] = field(default_factory=dict)  # seconds after its start
    fleet_pxe: list[str] = field(default_factory=list)

    def ip(self, node: str) -> str:
        return str(self.inv.nodes[node].address)

    def dhcp(self) -> str:
        return self.dnsmasq_log.read_text(errors="replace")

    def http(self) -> list[pxelab.HttpReq]:
        return pxelab.http_log(self.http_log)

    def fetched(self, node: str | None = None) -> list[tuple[str, str, str]]:
        """(transport, client, path) of every file served, in order per transport:
        nginx's 200s, then dnsmasq's TFTP transfers (paths relative to the TFTP root)."""
        ip = self.ip(node) if node else None
        tftp_root = str(self.work / "pxe" / "tftp")
        out = [("http", r.client, r.path) for r in self.http() if r.status == 200]
        out += [("tftp", c, p.removeprefix(tftp_root)) for p, c in
                re.findall(r"dnsmasq-tftp\[\d+\]: sent (\S+) to (\S+)", self.dhcp())]
        return [f for f in out if ip is None or f[1] == ip]

    def paths(self, node: str) -> list[str]:
        return [p for _t, _c, p in self.fetched(node)]

    def tftp_misses(self, node: str, rel: str) -> list[re.Match[str]]:
        """dnsmasq's "not found" answers to NODE's TFTP requests for REL, in its log."""
        return list(re.finditer(rf"dnsmasq-tftp\[\d+\]: file \S+/{re.escape(rel)} not found "
                                rf"for {re.escape(self.ip(node))}$", self.dhcp(), re.M))


def fleet(work: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(pxelab.ROOT / "tools")}
    proc = subprocess.run([sys.executable, "-m", "fleet", *args, "-i", str(SMALL),
                           "--overlay", str(work / "overlay.yaml")], env=env, text=True,
                          capture_output=True, check=True)
    return proc.stdout


def reinstall_argv(node: str, work: Path, conf: Path, *extra: str) -> list[str]:
    """`fleet reinstall NODE` on the small inventory and the bed's rendered tree in WORK."""
    return [sys.executable, "-m", "fleet", "reinstall", node, "-i", str(SMALL),
            "--overlay", str(work / "overlay.yaml"), "--state-dir", str(work / "reinstall"),
            "--salt-config", str(conf), "--pxe-root", str(work / "pxe"),
            "--pxe-state", str(work / "state"), "--secrets", str(work / "secrets"), *extra]
