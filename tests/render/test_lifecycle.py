"""Node lifecycle and one-node edits on the real inventory: adding, retiring or moving a
node rewrites only that node's files and the site-wide files that list nodes (DHCP, DNS,
Slurm, hosts, mkv, nginx's token rules, the pillar top); no other node's pillar or
installer seed changes, so no other minion restarts."""

from __future__ import annotations

from functools import cache

import yaml

from fleet.inventory.load import parse
from fleet.inventory.model import Inventory
from fleet.render import render_all
from support.cli import ROOT
from support.lifecycle import site_lists as _lists

INVENTORY = ROOT / "inventory.yaml"

# four TinyBoxes, two per IB fabric (the ports left on ib1 and ib2), on sw3 and mgmt2
FOUR_NODES = """
node_groups:
  tbox3a:
    hosts: tbox-[076-077]
    profile: tinybox-pro
    roles: [nvidia, infiniband, slurm.compute]
    slurm_partition: tbox1
    nics:
      prov: {network: prov, ip_base: 10.1.1.0, switch: sw3, first_port: 29}
      ib: {network: ib-tbox1, ip_base: 10.2.0.0, switch: ib1, first_port: 39}
      bmc: {network: bmc, ip_base: 10.0.1.0, switch: mgmt2, first_port: 38}
  tbox3b:
    hosts: tbox-[078-079]
    profile: tinybox-pro
    roles: [nvidia, infiniband, slurm.compute]
    slurm_partition: tbox2
    nics:
      prov: {network: prov, ip_base: 10.1.1.0, switch: sw3, first_port: 31}
      ib: {network: ib-tbox2, ip_base: 10.2.1.0, switch: ib2, first_port: 38}
      bmc: {network: bmc, ip_base: 10.0.1.0, switch: mgmt2, first_port: 40}
nodes:
  tbox-076: {serial: TBPNEW0076, mac: "0c:42:a1:f0:00:76", bmc_mac: "a8:a1:59:f0:00:76",
             ib_guid: "0x1070fd03f0000076"}
  tbox-077: {serial: TBPNEW0077, mac: "0c:42:a1:f0:00:77", bmc_mac: "a8:a1:59:f0:00:77",
             ib_guid: "0x1070fd03f0000077"}
  tbox-078: {serial: TBPNEW0078, mac: "0c:42:a1:f0:00:78", bmc_mac: "a8:a1:59:f0:00:78",
             ib_guid: "0x1070fd03f0000078"}
  tbox-079: {serial: TBPNEW0079, mac: "0c:42:a1:f0:00:79", bmc_mac: "a8:a1:59:f0:00:79",
             ib_guid: "0x1070fd03f0000079"}
"""


def _inventory(*overlays: str) -> Inventory:
    return parse(INVENTORY.read_text(), str(INVENTORY),
                 [(o, f"overlay{i}.yaml") for i, o in enumerate(overlays)])


@cache
def _site() -> dict[str, str]:
    return render_all(_inventory())


def _changes(after: dict[str, str]) -> tuple[set[str], set[str], set[str]]:
    """(added, removed, changed) files against the real site's render."""
    before = _site()
    added = set(after) - set(before)
    removed = set(before) - set(after)
    changed = {p for p in set(before) & set(after) if before[p] != after[p]}
    return added, removed, changed


def _own(hosts: list[str], files: set[str]) -> set[str]:
    return {p for p in files if any(f"/{h}/" in p or p.endswith(f"/{h}")
                                    or p.endswith(f"/{h}.sls") for h in hosts)}


def test_adding_four_nodes_rewrites_their_files_and_the_site_lists_only() -> None:
    added, removed, changed = _changes(render_all(_inventory(FOUR_NODES)))
    new = ["tbox-076", "tbox-077", "tbox-078", "tbox-079"]
    assert not removed
    assert added == _own(new, added) and len(added) == 4 * 8, sorted(added)
    # only the lists of nodes: no other node's pillar or installer seed (no minion restart)
    assert changed == _lists(changed), sorted(changed - _lists(changed))
    assert not [p for p in changed if p.startswith(("pillar/nodes/", "pxe/http/"))]


def test_retiring_a_node_removes_its_files_and_keeps_its_neighbours_ports() -> None:
    inv = _inventory("nodes:\n  tbox-010: {state: retired}\n")
    assert "tbox-010" in inv.retired and "tbox-010" not in inv.nodes
    assert inv.nodes["tbox-011"].prov.port == _inventory().nodes["tbox-011"].prov.port == 11
    added, removed, changed = _changes(render_all(inv))
    assert not added
    assert removed == _own(["tbox-010"], removed) and len(removed) == 8, sorted(removed)
    assert changed == _lists(changed), sorted(changed - _lists(changed))


def test_moving_a_node_to_another_partition_is_one_edit_to_it() -> None:
    """A partition "debug" on ib1 (a site edit) and tbox-038 in it (one field of that
    node): its own pillar and Slurm's lists change, nothing else; its ports stay."""
    base = _inventory("slurm:\n  partitions:\n    debug: {ib_switch: ib1}\n"
                      "nodes:\n  tbox-037: {slurm_partition: debug}\n")
    inv = _inventory("slurm:\n  partitions:\n    debug: {ib_switch: ib1}\n"
                     "nodes:\n  tbox-037: {slurm_partition: debug}\n"
                     "  tbox-038: {slurm_partition: debug}\n")
    assert inv.nodes["tbox-038"].partition == "debug"
    assert inv.nodes["tbox-038"].interfaces == base.nodes["tbox-038"].interfaces
    before, after = render_all(base), render_all(inv)
    changed = {p for p in before if before[p] != after.get(p)}
    assert changed - {"pictures/fabrics.svg"} == {"pillar/nodes/tbox-038.sls",
                                                  "pillar/slurm.sls"}, sorted(changed)


def test_a_planned_node_is_rendered_and_a_future_node_in_slurm() -> None:
    files = render_all(_inventory(FOUR_NODES, "nodes:\n  tbox-076: {state: planned}\n"
                                              "  tbox-077: {state: planned}\n"))
    assert "pxe/dnsmasq/hosts/tbox-076" in files
    assert "pxe/http/hosts/tbox-076/user-data" in files
    slurm = yaml.safe_load(files["pillar/slurm.sls"])["slurm"]
    states = {line["names"]: line["state"] for line in slurm["nodes"]}
    assert states["tbox-[076-077]"] == "FUTURE"
    assert states["tbox-[001-075,078-079]"] == "UNKNOWN"
    members = {p["name"]: p["nodes"] for p in slurm["partitions"]}
    assert members["tbox1"] == "tbox-[001-038,076-077]"  # FUTURE nodes stay in it
