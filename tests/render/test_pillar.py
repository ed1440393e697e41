"""The Salt pillar of the site inventory (inventory.yaml): targeted facts about what each
minion gets, checked against the inventory model rather than against earlier output."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fleet.inventory import compute
from fleet.inventory import roles as node_roles
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.render import pillar as pillar_renderer
from render.helpers import load_yaml

HOSTLIST_PART = re.compile(r"([^,\[]+)(?:\[([^\]]+)\])?(?:,|$)")


def expand(hostlist: str) -> list[str]:
    """Slurm hostlist -> names (independent of fleet.render.hostlist)."""
    names: list[str] = []
    for m in HOSTLIST_PART.finditer(hostlist):
        prefix, ranges = m[1], m[2]
        if ranges is None:
            names.append(prefix)
            continue
        for r in ranges.split(","):
            lo, _, hi = r.partition("-")
            width = len(lo) if lo.startswith("0") else 0
            names += [f"{prefix}{i:0{width}d}" for i in range(int(lo), int(hi or lo) + 1)]
    assert names, hostlist
    return names


def test_expand() -> None:
    assert expand("tbox-[001-003,007]") == ["tbox-001", "tbox-002", "tbox-003", "tbox-007"]
    assert expand("a-[8-10],head-01") == ["a-8", "a-9", "a-10", "head-01"]
    assert expand("x-01") == ["x-01"]


@pytest.fixture(scope="module")
def pillar(site_files: dict[str, str]) -> dict[str, Any]:
    """pillar path (without 'pillar/' and '.sls') -> parsed data."""
    out = {}
    for path, text in site_files.items():
        if path.startswith("pillar/"):
            assert path.endswith(".sls"), path
            out[path.removeprefix("pillar/").removesuffix(".sls")] = load_yaml(text)
    return out


def test_gpu_nodes_and_partitions(site_inv: Inventory, pillar: dict[str, Any]) -> None:
    slurm = pillar["slurm"]["slurm"]
    parts = {p["name"]: expand(p["nodes"]) for p in slurm["partitions"]}
    assert {k: len(v) for k, v in parts.items()} == {"tbox1": 38, "tbox2": 37}
    assert parts["tbox1"] == [f"tbox-{i:03d}" for i in range(1, 39)]
    assert parts["tbox2"] == [f"tbox-{i:03d}" for i in range(39, 76)]
    assert [p["name"] for p in slurm["partitions"] if p["default"]] == ["tbox1"]
    gpu_nodes = [n for n, d in pillar.items()
                 if n.startswith("nodes/") and "nvidia" in d["node"]["roles"]]
    assert len(gpu_nodes) == 75
    for name in parts["tbox1"] + parts["tbox2"]:
        node = pillar[f"nodes/{name}"]["node"]
        assert node["hardware"]["gpu"]["count"] == 8
        part = "tbox1" if name in parts["tbox1"] else "tbox2"
        assert node["slurm"] == {"partition": part}
    computes = sorted(n.hostname for n in site_inv.with_role("slurm.compute"))
    assert sorted(parts["tbox1"] + parts["tbox2"]) == computes
    assert slurm["controller"] == {"host": "head-01",
                                   "address": str(site_inv.nodes["head-01"].address)}


def test_slurm_node_lines_and_gres(site_inv: Inventory, pillar: dict[str, Any]) -> None:
    slurm = pillar["slurm"]["slurm"]
    covered = Counter(n for line in slurm["nodes"] for n in expand(line["names"]))
    assert set(covered.values()) == {1}, "each compute node in exactly one NodeName line"
    assert sorted(covered) == sorted(n.hostname for n in site_inv.with_role("slurm.compute"))
    for line in slurm["nodes"]:
        for name in expand(line["names"]):
            p = site_inv.nodes[name].profile
            assert (line["sockets"], line["cores_per_socket"], line["threads_per_core"]) == (
                p.cpu.sockets, p.cpu.cores_per_socket, p.cpu.threads_per_core)
            assert line["real_memory_mb"] < p.memory_gb * 1024
            assert p.gpu is not None
            assert line["gres"] == f"gpu:{p.gpu.model}:{p.gpu.count}"
    # gres.conf: every GPU of every node exactly once, cores inside the machine
    for g in slurm["gres"]:
        assert g["name"] == "gpu"
        c_lo, c_hi = (int(x) for x in g["cores"].split("-"))
        for name in expand(g["names"]):
            p = site_inv.nodes[name].profile
            assert p.gpu is not None and g["type"] == p.gpu.model
            assert 0 <= c_lo <= c_hi < p.cpu.sockets * p.cpu.cores_per_socket
    files = gres_files(slurm)
    assert set(files) == set(covered)
    for name in covered:
        gpu = site_inv.nodes[name].profile.gpu
        assert gpu is not None
        assert sorted(files[name]) == list(range(gpu.count)), name


def gres_files(slurm: dict[str, Any]) -> dict[str, list[int]]:
    """node -> GPU indices named by the gres File= lines (all of them, repeats kept)."""
    files: dict[str, list[int]] = {}
    for g in slurm["gres"]:
        m = re.fullmatch(r"/dev/nvidia(?:(\d+)|\[(\d+)-(\d+)\])", g["file"])
        assert m, g["file"]
        lo, hi = (int(m[1]), int(m[1])) if m[1] else (int(m[2]), int(m[3]))
        for name in expand(g["names"]):
            files.setdefault(name, []).extend(range(lo, hi + 1))
    return files


@pytest.mark.parametrize(("gpus", "sockets"), [
    (1, 2), (2, 2), (4, 1),
    (3, 2),
    (6, 4),
])
def test_gres_names_every_gpu_once(small_text: str, inventory_file: Callable[..., Path],
                                   gpus: int, sockets: int) -> None:
    text = small_text.replace("gpu: {model: rtx4090, count: 8, memory_gb: 24}",
                              f"gpu: {{model: rtx4090, count: {gpus}, memory_gb: 24}}")
    text = text.replace("cpu: {model: AMD EPYC 9004, sockets: 2,",
                        f"cpu: {{model: AMD EPYC 9004, sockets: {sockets},")
    text = text.replace("hardware: {gpus: 8, cpu_sockets: 2}",
                        f"hardware: {{gpus: {gpus}, cpu_sockets: {sockets}}}")
    inv = load_inventory(inventory_file(text))
    slurm = load_yaml(pillar_renderer.render(inv)["pillar/slurm.sls"])["slurm"]
    for name, indices in gres_files(slurm).items():
        assert sorted(indices) == list(range(gpus)), f"{name}: File= names GPUs {indices}"
    assert set(gres_files(slurm)) == {n.hostname for n in inv.with_role("slurm.compute")}


def test_topology_one_switch_per_partition(site_inv: Inventory,
                                           pillar: dict[str, Any]) -> None:
    slurm = pillar["slurm"]["slurm"]
    topo = slurm["topology"]
    parts = {p["name"]: p for p in slurm["partitions"]}
    cfg = site_inv.raw.slurm
    assert cfg is not None
    assert len(topo) == len(parts) == len(cfg.partitions)
    switches = [t["switch"] for t in topo]
    assert len(set(switches)) == len(switches), "one switch per partition"
    seen: set[str] = set()
    for t, (pname, part) in zip(topo, parts.items(), strict=True):
        nodes = set(expand(t["nodes"]))
        assert nodes == set(expand(part["nodes"])), pname
        assert not nodes & seen, f"{t['switch']} shares nodes with another switch"
        seen |= nodes
        assert t["switch"] == cfg.partitions[pname].ib_switch
        for name in nodes:  # and the nodes really are cabled to that switch
            ib = site_inv.nodes[name].interfaces["ib"]
            assert ib.switch == t["switch"], name


def test_mkv_arrays(site_inv: Inventory, pillar: dict[str, Any]) -> None:
    arrays = pillar["mkv"]["mkv"]["arrays"]
    training = arrays["training"]
    assert training["replicas"] == 1
    assert len(training["volumes"]) == 50
    assert training["subvolumes"] == 8
    assert (arrays["cache"]["subvolumes"], arrays["models"]["subvolumes"]) == (4, 24)
    assert arrays["models"]["replicas"] == 3
    for aname, array in arrays.items():
        members = site_inv.in_array(aname)
        assert array["volumes"] == [f"{n.hostname}:{array['volume_port']}" for n in members]
        assert len(set(array["volumes"])) == len(array["volumes"])
        for vol in array["volumes"]:
            host, port = vol.split(":")
            node = pillar[f"nodes/{host}"]["node"]
            # the same host:port string in the master's list and on the volume itself
            assert node["mkv"]["volume"] == vol
            assert node["mkv"]["array"] == aname and node["mkv"]["port"] == int(port)
            data = node["disks"]["data"]
            assert node["mkv"]["subvolumes"] == len(data) == array["subvolumes"]
            assert [d["name"] for d in data] == [f"sv{i:02X}" for i in range(len(data))]
            assert [d["mount"] for d in data] == [f"/srv/mkv/sv{i:02X}" for i in range(len(data))]
    model = pillar["nodes/model-01"]["node"]["disks"]["data"]
    assert [d["name"] for d in model][9:12] == ["sv09", "sv0A", "sv0B"]
    assert model[-1]["name"] == "sv17"


def top_entries(pillar: dict[str, Any]) -> dict[str, list[str]]:
    top: dict[str, list[str]] = pillar["top"]["base"]
    return top


def test_top_targets_minion_ids_only(site_inv: Inventory, pillar: dict[str, Any]) -> None:
    top = top_entries(pillar)
    assert set(pillar["top"]) == {"base"}
    assert set(top) == set(site_inv.nodes), "one entry per minion id, nothing else"
    for target, sls in top.items():
        assert re.fullmatch(r"[a-z][a-z0-9-]*", target), f"{target!r} is not a plain id"
        assert len(sls) == len(set(sls)), target
        assert sls[:3] == ["site", "hosts", f"nodes.{target}"]
        assert not [s for s in sls if s.startswith("nodes.") and s != f"nodes.{target}"]
        for s in sls:  # every SLS named exists (secrets live in their own pillar root)
            assert s.startswith("secrets.") or s.replace(".", "/") in pillar, s


def test_sls_reach_only_the_roles_that_need_them(site_inv: Inventory,
                                                 pillar: dict[str, Any]) -> None:
    top = top_entries(pillar)
    for node in site_inv.nodes.values():
        sls = set(top[node.hostname])
        slurm = node.has("slurm.compute") or node.has("slurm.controller")
        assert ("secrets.munge" in sls) == slurm, node.hostname
        assert ("slurm" in sls) == slurm, node.hostname
        assert ("mkv" in sls) == node.has("mkv.master"), node.hostname
        # the provisioning host, and the standby master (its checkout: provisioning.master)
        standby = site_inv.raw.site.salt.standby
        assert ("provisioning" in sls) == (node.hostname in {
            site_inv.raw.site.provisioning_host, standby and standby.host})
    munge = sorted(h for h, sls in top.items() if "secrets.munge" in sls)
    assert munge == sorted(["head-01", *(f"tbox-{i:03d}" for i in range(1, 76))])


def test_node_pillars(site_inv: Inventory, pillar: dict[str, Any]) -> None:
    nodes = {k.removeprefix("nodes/") for k in pillar if k.startswith("nodes/")}
    assert nodes == set(site_inv.nodes)
    for node in site_inv.nodes.values():
        d = pillar[f"nodes/{node.hostname}"]["node"]
        assert d["hostname"] == node.hostname
        assert d["fqdn"] == f"{node.hostname}.{site_inv.raw.site.domain}"
        # the inventory's roles, then those fleet.inventory.roles derives: monitoring, the
        # lldp role, the compute section's, a standby master's and the sftp backup host's
        assert d["roles"] == [*node.roles, *node_roles.monitoring(site_inv.raw, node), "lldp",
                              *compute.roles(site_inv.raw, node),
                              *node_roles.standby(site_inv.raw, node),
                              *node_roles.backup(site_inv.raw, node)]
        assert d["roles"] == list(node.all_roles)
        assert {"base", "network", "monitoring.node", "lldp"} <= set(d["roles"])
        assert d["lldp"] == {"interfaces": ["prov"], "system_name": node.hostname}
        ifaces = {n: i for n, i in node.interfaces.items() if n != "bmc"}
        assert set(d["interfaces"]) == set(ifaces)
        for name, iface in ifaces.items():
            got = d["interfaces"][name]
            assert got["address"] == str(iface.address)
            assert got["cidr"] == str(iface.cidr) and got["prefixlen"] == iface.cidr.prefixlen
            assert got["network"] == iface.network and got["mtu"] == iface.mtu
            assert got.get("boot", False) == (name == node.boot_nic)
        assert d["interfaces"][node.boot_nic]["mac"] == node.mac
        bmc = node.interfaces["bmc"]
        assert d["bmc"]["address"] == str(bmc.address) and d["bmc"]["mac"] == node.bmc_mac
        if node.has("infiniband"):
            assert d["ib_guid"] == node.ib_guid and d["ib_guid"] is not None


def test_hosts_table(site_inv: Inventory, pillar: dict[str, Any]) -> None:
    rows = pillar["hosts"]["hosts"]
    domain = site_inv.raw.site.domain
    addresses = Counter(r["address"] for r in rows)
    assert max(addresses.values()) == 1, [a for a, n in addresses.items() if n > 1]
    names = Counter(n for r in rows for n in r["names"])
    assert max(names.values()) == 1, [a for a, n in names.items() if n > 1]
    primary = {r["names"][1]: r["address"] for r in rows}
    for node in site_inv.nodes.values():
        assert primary[node.hostname] == str(node.address)
        row = next(r for r in rows if r["address"] == str(node.address))
        assert row["names"] == [f"{node.hostname}.{domain}", node.hostname]
        bmc = node.interfaces["bmc"]
        assert primary[f"{node.hostname}-bmc"] == str(bmc.address)
    n_addresses = sum(1 for n in site_inv.nodes.values()
                      for i in n.interfaces.values() if i.address is not None)
    assert len(rows) == n_addresses


SECRETISH = re.compile(r"pass(word|wd)?|secret|token|private|credential|munge.?key", re.I)


def walk(data: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield f"{path}.{k}", v
            yield from walk(v, f"{path}.{k}")
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from walk(v, f"{path}[{i}]")


def test_no_secrets_in_pillar(site_files: dict[str, str], pillar: dict[str, Any]) -> None:
    """Secrets never pass through the renderer: at most their names may appear."""
    for name, data in pillar.items():
        for path, value in walk(data):
            key = path.rsplit(".", 1)[-1]
            if SECRETISH.search(key):
                # only a reference by name, like profiles' password_secret: bmc-dell
                assert key.endswith("_secret") and isinstance(value, str) \
                    and re.fullmatch(r"[a-z][a-z0-9-]*", value), f"{name}{path}"
    for path, text in site_files.items():
        assert "-----BEGIN" not in text, f"{path} holds key material"
        if path.startswith("pillar/"):
            assert not re.search(r"^\s*(password|passwd|secret)\s*:", text, re.M | re.I), path
    assert not [p for p in site_files if p.startswith("pillar/secrets")]


def test_small_inventory_mkv(small_files: dict[str, str]) -> None:
    """11 data disks: subvolumes sv00..sv09, sv0A (mkv's %02X), the same host:port
    strings in the master's list and in each volume's own pillar."""
    mkv = load_yaml(small_files["pillar/mkv.sls"])["mkv"]["arrays"]["data"]
    assert mkv["volumes"] == ["stor-1:3001", "stor-2:3001"] and mkv["subvolumes"] == 11
    for host in ("stor-1", "stor-2"):
        node = load_yaml(small_files[f"pillar/nodes/{host}.sls"])["node"]
        assert node["mkv"]["volume"] == f"{host}:3001"
        assert [d["name"] for d in node["disks"]["data"]] == [
            "sv00", "sv01", "sv02", "sv03", "sv04", "sv05", "sv06", "sv07", "sv08", "sv09",
            "sv0A"]


def test_driver_branch_per_profile_over_the_site_default(tmp_path: Path) -> None:
    """site.nvidia_branch, with a profile's gpu.driver_branch merged over it per OS, in
    each GPU node's pillar node:nvidia:branches (what the nvidia role installs)."""
    from support.cli import SMALL

    overlay = tmp_path / "branch.yaml"
    overlay.write_text("site:\n  nvidia_branch: {ubuntu-24.04: '580', debian-12: '535'}\n"
                       "profiles:\n  gpu:\n    gpu: {driver_branch: {ubuntu-24.04: '590'}}\n")
    inv = load_inventory(SMALL, overlay)
    files = pillar_renderer.render(inv)
    gpu = load_yaml(files["pillar/nodes/gpu-01.sls"])["node"]
    assert gpu["nvidia"]["branches"] == {"ubuntu-24.04": "590", "debian-12": "535"}
    assert "driver_branch" not in gpu["hardware"]["gpu"]
    assert "nvidia" not in load_yaml(files["pillar/nodes/stor-1.sls"])["node"]
