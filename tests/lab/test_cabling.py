"""The lldp role and `fleet cabling` on the lab: every node's lldpd (from the one
bring-up's highstate) hears a STAND-IN for the Z9264F switches (tests/lab/standin_switch.py:
lldpd on the host ends of the nodes' veths, announcing the inventory's switch and port
names); `fleet cabling` (the real CLI, through the lab's Salt master) finds every node
where the inventory cables it; then a cable swap between tbox-001 and tbox-002 makes it
report exactly those two, each with its expected and found port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from labtools import ROOT, Lab, node_ids, poll
from standin_switch import StandinSwitch, port_name

SWAPPED = ("tbox-001", "tbox-002")  # both on sw1 (ports 1 and 2)


@pytest.fixture(scope="module")
def switch(lab: Lab) -> Iterator[StandinSwitch]:
    sw = StandinSwitch(lab.paths, lab.plan)
    try:
        sw.start()
        yield sw
    finally:
        sw.remove()


def cabling(lab: Lab, *args: str) -> tuple[int, Any, str]:
    """`fleet cabling ARGS --json` (the real CLI, this checkout) through the lab's master."""
    proc = subprocess.run(
        [sys.executable, "-m", "fleet", "cabling", "--json", "-i", str(ROOT / "inventory.yaml"),
         *lab.paths.overlay_args(), "--salt-config", str(lab.paths.salt_etc), *args],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tools")})
    assert proc.stdout.strip().startswith("{"), (proc.returncode, proc.stderr[-3000:])
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.mark.parametrize("node", node_ids())
def test_lldpd_listens_on_the_inventory_nic_only(lab: Lab, node: str) -> None:
    host = lab.host(node)
    assert host.service("lldpd").is_running and host.service("lldpd").is_enabled
    conf = host.file("/etc/lldpd.d/fleet.conf").content_string
    assert f"configure system hostname {node}\n" in conf
    assert "configure system interface pattern prov\n" in conf
    # lldpcli's keyvalue lines are lldp.<interface>.<key>=<value>
    out = host.check_output("lldpcli -f keyvalue show interfaces")
    assert {line.split(".")[1] for line in out.splitlines()
            if line.startswith("lldp.")} == {"prov"}, out


def _heard(lab: Lab, node: str, port: str) -> bool | None:
    out = lab.host(node).run("lldpcli -f keyvalue show neighbors ports prov").stdout
    return True if f"lldp.prov.port.local={port}" in out else None


def _wait_heard(lab: Lab, switch: StandinSwitch, nodes: list[str]) -> None:
    """Until each node hears its port as the stand-in names it now (every 5 s)."""
    for node in nodes:
        sw, end = switch.ends[node]
        want = port_name(switch.ports[sw][end])

        def probe(node: str = node, want: str = want) -> bool | None:
            return _heard(lab, node, want)
        poll(f"{node} hears {sw} {want}", probe, timeout=60)


def test_cabled_as_inventoried_then_a_swap(lab: Lab, switch: StandinSwitch) -> None:
    _wait_heard(lab, switch, list(switch.ends))
    rc, doc, err = cabling(lab)
    assert rc == 0, (err, doc)
    assert {n: v["verdict"] for n, v in doc["nodes"].items()} == dict.fromkeys(
        node_ids(), "ok")
    assert doc["counts"] == {"ok": len(node_ids())}

    a, b = SWAPPED
    switch.swap(a, b)
    _wait_heard(lab, switch, [a, b])
    rc, doc, err = cabling(lab)
    assert rc == 5, (err, doc)
    bad = {f["node"]: f for f in doc["findings"] if f["status"] != "ok"}
    assert set(bad) == {a, b}, doc["findings"]
    assert bad[a]["status"] == bad[b]["status"] == "wrong_port"
    assert bad[a]["expected"] == {"switch": "sw1", "port": 1}
    assert bad[a]["found"] == {"switch": "sw1", "port": 2, "port_id": "ethernet1/1/2"}
    assert bad[b]["expected"] == {"switch": "sw1", "port": 2}
    assert bad[b]["found"] == {"switch": "sw1", "port": 1, "port_id": "ethernet1/1/1"}
    assert [f["node"] for f in doc["findings"][:2]] == sorted(SWAPPED)  # problems first
