"""Prometheus's targets from the real inventory: every node, at its management address,
with what its profile says it has; a node added to the inventory is a target at once."""

from __future__ import annotations

import json

import yaml
from tests_paths import SITE

from fleet.inventory.load import load_inventory, parse
from fleet.inventory.model import Inventory
from fleet.render import monitoring, render_all
from support.cli import FIXTURES, SMALL


def _pillar(files: dict[str, str]) -> dict[str, object]:
    return yaml.safe_load(files["pillar/monitoring.sls"])["monitoring"]  # type: ignore[no-any-return]


def test_every_node_is_a_target_at_its_management_address(site_inv: Inventory) -> None:
    groups = monitoring.targets(site_inv)["node"]
    by_node = {g["labels"]["node"]: g for g in groups}
    # a planned node (the standby head, head-02) is scraped once it is installed
    installed = [h for h, n in site_inv.nodes.items() if n.state != "planned"]
    assert len(installed) < len(site_inv.nodes)
    assert list(by_node) == installed and len(groups) == len(installed)
    for name in installed:
        node, group = site_inv.nodes[name], by_node[name]
        # the provisioning network's address: the inventory has no management network
        assert group["targets"] == [f"{node.prov.address}:9100"]
        assert site_inv.raw.networks[node.prov.network].purpose == "provisioning"
        gpu = node.profile.gpu
        assert group["labels"].get("gpus_expected") == (str(gpu.count) if gpu else None)
        ib = [i for i in node.interfaces.values() if i.kind == "infiniband"]
        assert group["labels"].get("ib_ports") == (str(len(ib)) if ib else None)


def test_services_are_probed_where_the_inventory_puts_them(site_inv: Inventory) -> None:
    t = monitoring.targets(site_inv)
    assert site_inv.raw.mkv is not None and site_inv.raw.slurm is not None
    volumes = {(g["labels"]["node"], g["labels"]["array"]) for g in t["mkv_volume"]}
    assert volumes == {(n.hostname, n.mkv_array) for n in site_inv.with_role("mkv.volume")}
    for g in t["mkv_volume"]:
        node = site_inv.nodes[g["labels"]["node"]]
        port = site_inv.raw.mkv.arrays[g["labels"]["array"]].volume_port
        assert g["targets"] == [f"http://{node.address}:{port}/"]
    masters = {g["labels"]["array"]: g["targets"] for g in t["mkv_master"]}
    assert masters == {a: [f"{site_inv.nodes[arr.master].address}:{arr.port}"]
                       for a, arr in site_inv.raw.mkv.arrays.items()}
    ctl = site_inv.nodes[site_inv.raw.slurm.controller]
    assert t["slurmctld"] == [{"targets": [f"{ctl.address}:6817"],
                               "labels": {"node": ctl.hostname}}]


def test_triton_is_scraped_on_the_nodes_that_run_it(site_inv: Inventory) -> None:
    assert site_inv.raw.compute is not None and site_inv.raw.compute.triton.mode == "off"
    assert monitoring.targets(site_inv)["triton"] == []
    text = SITE.read_text()
    old = '    mode: "off"\n    # nvidia-pytriton'
    assert old in text
    inv = parse(text.replace(old, '    mode: wheel\n    groups: [tbox2]\n    # nvidia-pytriton'),
                str(SITE))
    groups = monitoring.targets(inv)["triton"]
    tbox2 = [n for n in inv.nodes.values() if n.group == "tbox2"]
    assert tbox2 and [g["labels"]["node"] for g in groups] == [n.hostname for n in tbox2]
    assert all(g["targets"] == [f"{inv.nodes[g['labels']['node']].address}:8002"]
               for g in groups)


def test_the_pillar_carries_targets_and_rules_to_the_monitoring_host_only(
        site_inv: Inventory) -> None:
    files = render_all(site_inv)
    top = yaml.safe_load(files["pillar/top.sls"])["base"]
    holders = [n for n, sls in top.items() if "monitoring" in sls]
    assert holders == [site_inv.raw.site.provisioning_host]  # site.monitoring.host unset
    pillar = _pillar(files)
    assert pillar["targets"] == json.loads(json.dumps(monitoring.targets(site_inv)))
    assert pillar["rules"] == json.loads(json.dumps(monitoring.rules(site_inv)))
    head = yaml.safe_load(files[f"pillar/nodes/{holders[0]}.sls"])["node"]
    assert "monitoring.server" in head["roles"]


def _with_model_09(text: str) -> str:
    text = text.replace("hosts: model-[01-08]", "hosts: model-[01-09]")
    line = ('  model-08: {serial: 8M70243429, mac: "b8:59:9f:85:df:55", '
            'bmc_mac: "f8:bc:12:d8:65:7d"}\n')
    assert line in text
    return text.replace(line, line + '  model-09: {serial: 8M70249999, mac: "b8:59:9f:85:df:99", '
                        'bmc_mac: "f8:bc:12:d8:65:99"}\n')


def test_a_node_added_to_the_inventory_is_a_target_with_its_thresholds() -> None:
    before = parse(SITE.read_text(), str(SITE))
    after = parse(_with_model_09(SITE.read_text()), str(SITE))
    assert "model-09" not in before.nodes
    old = _pillar(render_all(before))
    new = _pillar(render_all(after))
    nodes = {g["labels"]["node"]: g for g in new["targets"]["node"]}  # type: ignore[index]
    assert "model-09" in nodes
    assert nodes["model-09"]["targets"] == [f"{after.nodes['model-09'].address}:9100"]
    vols = {g["labels"]["node"] for g in new["targets"]["mkv_volume"]}  # type: ignore[index]
    assert "model-09" in vols
    assert len(new["targets"]["node"]) == len(old["targets"]["node"]) + 1  # type: ignore[index]
    # and it gets the exporter: monitoring.node in its roles
    files = render_all(after)
    assert "monitoring.node" in yaml.safe_load(files["pillar/nodes/model-09.sls"])["node"]["roles"]


def test_a_gpu_count_of_a_new_profile_gets_its_own_threshold() -> None:
    """GpuMissing compares each node with its own profile's count: a profile with 4 GPUs
    adds a term for 4, and the 8-GPU term stays."""
    text = SITE.read_text().replace(
        "gpu: {model: rtx4090, count: 8, memory_gb: 24}",
        "gpu: {model: rtx4090, count: 4, memory_gb: 24}")
    inv = parse(text, str(SITE))
    (gpu_missing,) = [r for g in monitoring.rules(inv)["groups"] for r in g["rules"]
                      if r["alert"] == "GpuMissing"]
    assert gpu_missing["expr"] == 'fleet_gpus_visible{gpus_expected="4"} < 4'
    labels = {g["labels"]["node"]: g["labels"] for g in monitoring.targets(inv)["node"]}
    assert labels["tbox-001"]["gpus_expected"] == "4"


def test_thresholds_come_from_site_monitoring() -> None:
    text = SITE.read_text().replace(
        "  pxe_root: /srv/fleet/pxe\n",
        "  pxe_root: /srv/fleet/pxe\n  monitoring:\n    host: head-01\n    retention_days: 90\n"
        "    storage_path: /srv/prometheus\n"
        "    thresholds: {filesystem_used_percent: 70, drained_hours: 6}\n")
    inv = parse(text, str(SITE))
    rules = {r["alert"]: r for g in monitoring.rules(inv)["groups"] for r in g["rules"]}
    assert rules["FilesystemFull"]["expr"].endswith("> 70")
    assert rules["SlurmNodesDrainedLong"]["expr"].endswith(f"> {6 * 3600}")
    pillar = monitoring.pillar(inv)
    assert (pillar["retention_days"], pillar["storage_path"]) == (90, "/srv/prometheus")


def test_each_alert_waits_as_long_as_the_inventory_says() -> None:
    """``for:`` of every rule is ``site.monitoring.thresholds.for_s.<alert>``: one field per
    rule, no field without a rule, today's durations by default."""
    inv = parse(SITE.read_text(), str(SITE))
    rules = {r["alert"]: r for g in monitoring.rules(inv)["groups"] for r in g["rules"]}
    holds = inv.raw.site.monitoring.thresholds.for_s
    assert sorted(rules) == sorted(type(holds).model_fields)
    assert (rules["GpuMissing"]["for"], rules["NodeDown"]["for"],
            rules["GpuXidErrors"]["for"]) == ("5m", "2m", "0m")
    text = SITE.read_text().replace(
        "  pxe_root: /srv/fleet/pxe\n",
        "  pxe_root: /srv/fleet/pxe\n  monitoring:\n"
        "    thresholds: {for_s: {GpuMissing: 10, NodeDown: 180}}\n")
    rules = {r["alert"]: r for g in monitoring.rules(parse(text, str(SITE)))["groups"]
             for r in g["rules"]}
    assert (rules["GpuMissing"]["for"], rules["NodeDown"]["for"]) == ("10s", "3m")
    assert rules["GpuHot"]["for"] == "10m"  # the others keep their defaults


def test_a_planned_node_is_scraped_once_it_is_installed() -> None:
    """Nothing answers at a planned node's address before its install: no target (and no
    NodeDown for it); in maintenance it is a target as when active."""
    inv = load_inventory(SMALL, FIXTURES / "lifecycle-overlay.yaml")
    states = {h: n.state for h, n in inv.nodes.items()}
    assert states["gpu-02"] == "planned" and states["gpu-03"] == "maintenance"
    scraped = [g["labels"]["node"] for g in monitoring.targets(inv)["node"]]
    assert scraped == [h for h, s in states.items() if s != "planned"]
    assert "gpu-03" in scraped and "gpu-01" not in scraped  # retired: not a node at all
