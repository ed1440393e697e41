"""``fleet node list|show`` and ``fleet ports`` on the real inventory: what they print is
the resolved model's (addresses, MACs, cabling), the filters, the usage errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fleet.inventory.expand import iter_nics
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.ops import nodes, ports
from ops.helpers import INVENTORY
from support.cli import run_fleet


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(INVENTORY)


def fleet_json(*args: str) -> Any:
    r = run_fleet(*args, "-i", str(INVENTORY), "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_node_show_json_is_the_model(inv: Inventory) -> None:
    [r] = fleet_json("node", "show", "tbox-001")["nodes"]
    n = inv.nodes["tbox-001"]
    assert (r["group"], r["profile"], r["partition"]) == (n.group, n.profile_name, n.partition)
    assert r["roles"] == list(n.all_roles) and "slurm.compute" in r["roles"]
    # the derived roles are listed too: a worker's compute, monitoring and lldp roles
    assert r["derived_roles"] == list(n.derived_roles)
    assert {"compute.worker", "codesync.client", "monitoring.gpu", "lldp"} <= \
        set(r["derived_roles"])
    assert not set(r["derived_roles"]) & set(n.roles)
    assert r["address"] == str(n.address) and r["mac"] == n.mac
    assert r["bmc"] == {"address": str(n.interfaces["bmc"].address), "mac": n.bmc_mac,
                        "protocol": "redfish", "kind": n.profile.bmc.kind,
                        "user": n.profile.bmc.user, "switch": n.interfaces["bmc"].switch,
                        "port": n.interfaces["bmc"].port}
    ib = next(i for i in r["interfaces"] if i["kind"] == "infiniband")
    assert (ib["switch"], ib["port"]) == (n.interfaces["ib"].switch, n.interfaces["ib"].port)
    assert r["disks"] == [{"role": d.role, "kind": d.kind, "size_gb": d.size_gb,
                           "count": d.count} for d in n.profile.disks]
    assert "state" in r  # the lifecycle state's place (None until the model has one)


def test_node_show_text_lists_the_derived_roles() -> None:
    r = run_fleet("node", "show", "head-01", "-i", str(INVENTORY))
    assert r.returncode == 0, r.stderr
    derived = next(ln for ln in r.stdout.splitlines() if ln.startswith("  derived "))
    for role in ("monitoring.server", "compute.valkey", "codesync.server", "lldp"):
        assert role in derived, derived


def test_node_list_where_role_matches_a_derived_role(inv: Inventory) -> None:
    out = fleet_json("node", "list", "--where", "role=codesync.server")["nodes"]
    assert [r["node"] for r in out] == [inv.raw.compute.codesync.host] if inv.raw.compute \
        else []


def test_node_list_target_and_where(inv: Inventory) -> None:
    out = fleet_json("node", "list", "tbox-[001-003]")
    assert [r["node"] for r in out["nodes"]] == ["tbox-001", "tbox-002", "tbox-003"]
    on_sw2 = fleet_json("node", "list", "--where", "switch=sw2")["nodes"]
    want = sorted({node.hostname for node, i in iter_nics(inv.nodes) if i.switch == "sw2"})
    assert sorted(r["node"] for r in on_sw2) == want and want
    both = fleet_json("node", "list", "--where", "switch=sw2", "--where", "role=mkv.*")
    assert all(any(x.startswith("mkv.") for x in r["roles"]) for r in both["nodes"])
    none = fleet_json("node", "list", "--where", "partition=-")["nodes"]
    assert {r["node"] for r in none} == {n.hostname for n in inv.nodes.values()
                                         if n.partition is None}


def test_node_tables_for_people(inv: Inventory) -> None:
    r = run_fleet("node", "list", "tbox-038", "-i", str(INVENTORY))
    n = inv.nodes["tbox-038"]
    row = r.stdout.splitlines()[1].split()
    assert row[0] == "tbox-038" and str(n.interfaces["bmc"].address) in row
    assert f"{n.prov.switch}:{n.prov.port}" in row
    r = run_fleet("node", "show", "tbox-038", "-i", str(INVENTORY))
    assert f"bmc        {n.interfaces['bmc'].address} (redfish" in r.stdout


def test_node_usage_errors() -> None:
    r = run_fleet("node", "list", "--where", "colour=blue", "-i", str(INVENTORY))
    assert r.returncode == 2 and "no field 'colour'" in r.stderr and "switch" in r.stderr
    r = run_fleet("node", "list", "--where", "switch", "-i", str(INVENTORY))
    assert r.returncode == 2 and "FIELD=VALUE" in r.stderr
    r = run_fleet("node", "show", "tbox-999", "-i", str(INVENTORY))
    assert r.returncode == 2 and "no such node" in r.stderr


def test_every_cabled_nic_is_on_exactly_one_port_and_the_rest_are_free(inv: Inventory) -> None:
    found = ports.switch_ports(inv)
    assert [s.name for s in found] == list(inv.raw.switches)
    cabled = {(i.switch, i.port): (node.hostname, i.name) for node, i in iter_nics(inv.nodes)
              if i.switch is not None and i.port is not None}
    listed = {(p.switch, p.port): (p.node, p.nic) for s in found for p in s.ports
              if p.node is not None}
    assert listed == cabled
    for s in found:
        assert len(s.ports) == inv.raw.switches[s.name].ports
        assert set(s.free) == {p for p in range(1, len(s.ports) + 1) if (s.name, p) not in cabled}


def test_ports_cli_for_one_switch(inv: Inventory) -> None:
    [sw2] = fleet_json("ports", "sw2")["switches"]
    port40 = next(c for c in sw2["cabled"] if c["port"] == 40)
    holder = next(n for n, i in iter_nics(inv.nodes) if i.switch == "sw2" and i.port == 40)
    assert port40["node"] == holder.hostname
    assert sw2["used"] + len(sw2["free"]) == sw2["ports"] == 64
    r = run_fleet("ports", "sw2", "ib2", "--free", "-i", str(INVENTORY))
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("sw2 (ethernet") and "ib2" in lines[1]
    assert lines[0].endswith(ports.ranges(sw2["free"]))
    r = run_fleet("ports", "sw9", "-i", str(INVENTORY))
    assert r.returncode == 2 and "no switch sw9" in r.stderr


def test_ranges() -> None:
    assert ports.ranges([1, 2, 3, 7, 9, 10]) == "1-3,7,9-10"
    assert ports.ranges([]) == "none"
    assert ports.ranges([5]) == "5"


def test_where_parsing() -> None:
    assert nodes.parse_where(["group=tbox*", "role=nvidia"]) == [("group", "tbox*"),
                                                                 ("role", "nvidia")]
    with pytest.raises(nodes.WhereError):
        nodes.parse_where(["group="])
