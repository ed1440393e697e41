"""The validation rules of `fleet validate` that one table row cannot show (a rule whose
single edit and problem fit one row is in test_single_edits.py).

Each test takes the small inventory, makes one targeted bad edit, and checks that
parse() raises InventoryError with the expected problem: code, dotted path, exact
line:column (computed from the edited text, never hard-coded) and a message that
names the offending value.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fleet.inventory import aptcache
from fleet.inventory.load import load_inventory, parse
from support.inventory_edits import FILE, edit, expect, find, problems_of, ref, set_in_node

ROOT = Path(__file__).resolve().parents[2]


# --- duplicates ----------------------------------------------------------------------------


def test_duplicate_mac(small_text: str) -> None:
    text, at = edit(small_text, 'mac: "52:54:00:00:00:66"', 'mac: "52:54:00:00:00:65"',
                    mark='"52:')
    first = find(text, '"52:54:00:00:00:65"', nth=0)
    assert first < at
    p = expect(text, "duplicate_mac", "nodes.gpu-02.mac", at,
               "52:54:00:00:00:65", "gpu-01", ref(first))
    assert str(p).startswith(
        f"{FILE}:{at[0]}:{at[1]}: nodes.gpu-02.mac: 52:54:00:00:00:65 is already used by "
        f"gpu-01 {ref(first)}")


def test_duplicate_ip_via_overlapping_ip_base(small_text: str) -> None:
    text, at = edit(small_text, "prov: {network: prov, ip_base: 10.1.0.150",
                    "prov: {network: prov, ip_base: 10.1.0.100", mark="10.1.0.100")
    base = find(text, "10.1.0.100", line_with="ip_base: 10.1.0.100, switch: sw1, first_port: 1}")
    expect(text, "duplicate_ip", "nodes.stor-1.ip.prov", at, "10.1.0.101", "gpu-01", ref(base))
    expect(text, "duplicate_ip", "nodes.stor-2.ip.prov", at, "10.1.0.102", "gpu-02", ref(base))


def test_duplicate_switch_port_via_first_port(small_text: str) -> None:
    text, at = edit(small_text, "switch: sw1, first_port: 10}", "switch: sw1, first_port: 3}",
                    mark="3}")
    expect(text, "duplicate_port", "nodes.stor-1.port.prov", at, "sw1 port 3", "gpu-03")
    expect(text, "duplicate_port", "nodes.stor-2.port.prov", at, "sw1 port 4", "gpu-04")


# --- addresses -----------------------------------------------------------------------------


@pytest.mark.parametrize("address", ["10.1.0.0", "10.1.0.255"])
def test_network_or_broadcast_address(small_text: str, address: str) -> None:
    old, new = set_in_node(small_text, "stor-1", f"ip: {{prov: {address}}}")
    text, at = edit(small_text, old, new, mark=address)
    expect(text, "outside_network", "nodes.stor-1.ip.prov", at, address, "network or broadcast")


def test_address_inside_the_dhcp_pool(small_text: str) -> None:
    old, new = set_in_node(small_text, "stor-1", "ip: {bmc: 10.0.0.210}")
    text, at = edit(small_text, old, new, mark="10.0.0.210")
    pool = find(text, "{start: 10.0.0.200")
    expect(text, "in_dhcp_pool", "nodes.stor-1.ip.bmc", at, "10.0.0.210",
           "10.0.0.200-10.0.0.250", ref(pool))


# --- MAC format ----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [
    "52:54:00:00:00:6",        # five and a half octets
    "52:54:00:00:00:6g",       # not hex
    "52:54:00:00:00",          # five octets
    "52:54:00:00:00:66:77",    # seven octets
    "52-54:00:00:00:66",       # mixed separators
    "525400000066",            # no separators
    "52.54.00.00.00.66",
    "00:00:00:00:00:00",       # all zeros
    "",
])
def test_malformed_mac(small_text: str, bad: str) -> None:
    text, at = edit(small_text, 'mac: "52:54:00:00:00:66"', f'mac: "{bad}"', mark='"')
    expect(text, "mac_format", "nodes.gpu-02.mac", at, bad)


@pytest.mark.parametrize("mac", ["01:00:5e:00:00:66", "33:33:00:00:00:01", "53:54:00:00:00:66"])
def test_multicast_mac(small_text: str, mac: str) -> None:
    text, at = edit(small_text, 'mac: "52:54:00:00:00:66"', f'mac: "{mac}"', mark='"')
    expect(text, "mac_multicast", "nodes.gpu-02.mac", at, mac, "multicast")


# --- references ----------------------------------------------------------------------------


@pytest.mark.parametrize(("old", "new", "group", "nic", "net"), [
    ("prov: {network: prov, ip_base: 10.1.0.150", "prov: {network: bmc, ip_base: 10.1.0.150",
     "storage", "prov", "bmc"),
    ("ib: {network: ib-b,", "ib: {network: prov,", "part-b", "ib", "prov"),
    ("bmc: {network: bmc, ip_base: 10.0.0.150", "bmc: {network: prov, ip_base: 10.0.0.150",
     "storage", "bmc", "prov"),
])
def test_nic_kind_does_not_match_network_purpose(small_text: str, old: str, new: str, group: str,
                                                 nic: str, net: str) -> None:
    text, at = edit(small_text, old, new, mark=f"network: {net}")
    at = (at[0], at[1] + len("network: "))
    expect(text, "mismatch", f"node_groups.{group}.nics.{nic}.network", at, f"'{nic}'",
           f"'{net}'")


# --- services ------------------------------------------------------------------------------


def test_mkv_array_with_no_nodes(small_text: str) -> None:
    old = "           index_path: /var/lib/mkv/data}\n"
    text, at = edit(small_text, old, old + "    empty: {master: head-01, port: 3100, "
                    "volume_port: 3101, replicas: 1, index_path: /var/lib/mkv/empty}\n",
                    mark="empty:")
    expect(text, "empty", "mkv.arrays.empty", at, "empty")


def test_mkv_volumes_with_different_data_disk_counts(small_text: str) -> None:
    # stor-2 moves to its own group whose profile has 10 data disks instead of 11
    start = small_text.index("  storage:\n    vendor: Dell")
    end = small_text.index("  head:\n    vendor: Dell")
    profile = small_text[start:end]
    assert "count: 11" in profile
    text, _ = edit(small_text, profile, profile + profile.replace("  storage:", "  storage-b:")
                   .replace("count: 11", "count: 10"))
    group = ("  storage-b:\n    hosts: stor-2\n    profile: storage-b\n    roles: [mkv.volume]\n"
             "    mkv_array: data\n    nics:\n"
             "      prov: {network: prov, ip_base: 10.1.0.150, switch: sw1, first_port: 11}\n"
             "      bmc: {network: bmc, ip_base: 10.0.0.150, switch: mgmt1, first_port: 11}\n")
    text, _ = edit(text, "hosts: stor-[1-2]", "hosts: stor-1")
    text, _ = edit(text, "\nslurm:\n", "\n" + group + "\nslurm:\n")
    at = find(text, "data: {master")
    expect(text, "mismatch", "mkv.arrays.data", at, "data", "[10, 11]")


def test_mkv_master_without_the_role(small_text: str) -> None:
    text, _ = edit(small_text, "roles: [provisioning, slurm.controller, mkv.master]",
                   "roles: [provisioning, slurm.controller]")
    expect(text, "mismatch", "mkv.arrays.data.master", find(text, "head-01, port: 3000"),
           "head-01", "mkv.master")


def test_slurm_controller_without_the_role(small_text: str) -> None:
    text, _ = edit(small_text, "roles: [provisioning, slurm.controller, mkv.master]",
                   "roles: [provisioning, mkv.master]")
    at = find(text, "head-01", line_with="controller: head-01")
    expect(text, "mismatch", "slurm.controller", at, "head-01", "slurm.controller")


def test_provisioning_host_without_the_role(small_text: str) -> None:
    text, _ = edit(small_text, "roles: [provisioning, slurm.controller, mkv.master]",
                   "roles: [slurm.controller, mkv.master]")
    at = find(text, "head-01", line_with="provisioning_host:")
    expect(text, "mismatch", "site.provisioning_host", at, "head-01", "provisioning")


def test_partition_members_not_cabled_to_the_partitions_ib_switch(small_text: str) -> None:
    text, _ = edit(small_text, "tbox2: {ib_switch: ib2}", "tbox2: {ib_switch: ib1}")
    at = find(text, "tbox2", line_with="slurm_partition: tbox2")
    expect(text, "mismatch", "node_groups.part-b.slurm_partition", at, "gpu-03", "tbox2", "ib1")


def test_slurm_compute_group_without_a_partition(small_text: str) -> None:
    text, _ = edit(small_text, "    slurm_partition: tbox2\n", "")
    at = find(text, "[nvidia", nth=1)  # part-b's roles (part-a's come first)
    expect(text, "missing", "node_groups.part-b.roles", at, "slurm.compute", "slurm_partition")


def test_partition_on_a_group_without_slurm_compute(small_text: str) -> None:
    text, _ = edit(small_text, "roles: [nvidia, infiniband, slurm.compute]\n    slurm_partition: "
                   "tbox2", "roles: [nvidia, infiniband]\n    slurm_partition: tbox2")
    at = find(text, "tbox2", line_with="slurm_partition: tbox2")
    expect(text, "mismatch", "node_groups.part-b.slurm_partition", at, "slurm.compute")


def test_slurm_roles_without_a_slurm_section(small_text: str) -> None:
    start = small_text.index("slurm:\n  cluster:")
    end = small_text.index("mkv:\n  arrays:")
    text, _ = edit(small_text, small_text[start:end], "")
    at = find(text, "tbox1", line_with="slurm_partition: tbox1")
    p = expect(text, "unknown_ref", "node_groups.part-a.slurm_partition", at, "'tbox1'")
    assert "no slurm section" in (p.hint or "")
    assert any(p.code == "missing" and "'slurm' section" in p.message for p in problems_of(text))


def test_mkv_volume_group_without_an_array(small_text: str) -> None:
    text, _ = edit(small_text, "    mkv_array: data\n", "")
    at = find(text, "[mkv.volume]")
    expect(text, "missing", "node_groups.storage.roles", at, "mkv.volume", "mkv_array")


# --- hardware facts ------------------------------------------------------------------------


# --- nodes vs groups -----------------------------------------------------------------------


@pytest.mark.parametrize("hosts", ["stor-[2-1]", "x-[5-1]"])
def test_empty_host_range(small_text: str, hosts: str) -> None:
    text, at = edit(small_text, "hosts: stor-[1-2]", f"hosts: {hosts}", mark=hosts)
    expect(text, "invalid", "node_groups.storage.hosts", at, hosts, "empty")


def test_host_without_a_number_cannot_use_ip_base(small_text: str) -> None:
    text = small_text
    for old, new in (("hosts: head-01", "hosts: head"), ("  head-01: {", "  head: {"),
                     ("master: head-01}", "master: head}"),
                     ("provisioning_host: head-01", "provisioning_host: head"),
                     ("controller: head-01", "controller: head"),
                     ("{master: head-01, port", "{master: head, port")):
        text, _ = edit(text, old, new)
    at = find(text, "10.1.0.9,")
    expect(text, "invalid", "node_groups.head.nics.prov.ip_base", at, "head", "ip_base")


# --- schema --------------------------------------------------------------------------------


def test_unknown_field_points_at_the_key(small_text: str) -> None:
    text, at = edit(small_text, "    read_gbps: 20\n", "    read_gbps: 20\n    colour: blue\n",
                    mark="colour")
    p = expect(text, "extra_forbidden", "profiles.storage.colour", at, "'colour'")
    assert p.hint


def test_missing_required_field_points_at_the_parent(small_text: str) -> None:
    text, _ = edit(small_text, "  stor-1: {serial: STOR0001, ", "  stor-1: {")
    at = find(text, "{", line_with="  stor-1: {")
    expect(text, "missing", "nodes.stor-1.serial", at, "'serial'")


def test_missing_required_field_in_a_block_map(small_text: str) -> None:
    text, _ = edit(small_text, "    memory_gb: 128\n", "")
    at = find(text, "vendor: Dell", nth=0)  # a block map starts at its first key
    expect(text, "missing", "profiles.storage.memory_gb", at, "'memory_gb'")


@pytest.mark.parametrize(("old", "new", "mark", "path", "code"), [
    ("memory_gb: 128", "memory_gb: lots", "lots", "profiles.storage.memory_gb", "int_type"),
    ("memory_gb: 128", "memory_gb: 128.5", "128.5", "profiles.storage.memory_gb",
     "int_type"),
    ("serial: STOR0001", "serial: 12345", "12345", "nodes.stor-1.serial", "string_type"),
    ("vlan: 20,", "vlan: yes,", "yes", "networks.prov.vlan", "int_type"),  # no YAML bool as 1
    ("read_gbps: 20", "read_gbps: 1e999", "1e999", "profiles.storage.read_gbps",
     "finite_number"),
    ("gateway: 10.1.0.1,", "gateway: nope,", "nope", "networks.prov.gateway", "ip_v4_address"),
    ("vlan: 10,", "vlan: 5000,", "5000", "networks.bmc.vlan", "less_than_equal"),
    ('ib_guid: "0x1070fd0300000002"', 'ib_guid: "0x1070fd03000002"', '"0x1070fd03000002"',
     "nodes.gpu-02.ib_guid", "string_pattern_mismatch"),
    ("cidr: 10.2.1.0/24", "cidr: 10.2.1.0/33", "10.2.1.0/33", "networks.ib-b.cidr",
     "ip_v4_network"),
])
def test_wrong_type(small_text: str, old: str, new: str, mark: str, path: str, code: str) -> None:
    text, at = edit(small_text, old, new, mark=mark)
    expect(text, code, path, at, mark.strip('"[]'))


@pytest.mark.parametrize(("old", "new", "mark", "path", "code"), [
    ("  stor-1: {serial", "  Stor-1: {serial", "Stor-1", "nodes.Stor-1", "value_error"),
    ("  ib-b: {purpose", "  ib_b: {purpose", "ib_b", "networks.ib_b",
     "string_pattern_mismatch"),
])
def test_bad_name_as_a_mapping_key_points_at_the_key(small_text: str, old: str, new: str,
                                                     mark: str, path: str, code: str) -> None:
    text, at = edit(small_text, old, new, mark=mark)
    expect(text, code, path, at, f"'{mark}'", "lower-case")


# --- networks ------------------------------------------------------------------------------


@pytest.mark.parametrize(("old", "new", "value"), [
    ("end: 10.0.0.250}", "end: 10.0.1.250}", "10.0.1.250"),
    ("{start: 10.0.0.200,", "{start: 10.9.0.200,", "10.9.0.200"),
])
def test_dhcp_pool_outside_the_cidr(small_text: str, old: str, new: str, value: str) -> None:
    text, _ = edit(small_text, old, new)
    at = find(text, "{start:")
    expect(text, "outside_network", "networks.bmc.dhcp_pool", at, value, "10.0.0.0/24")


def test_dhcp_pool_that_ends_before_it_starts(small_text: str) -> None:
    text, _ = edit(small_text, "{start: 10.0.0.200, end: 10.0.0.250}",
                   "{start: 10.0.0.250, end: 10.0.0.200}")
    expect(text, "invalid", "networks.bmc.dhcp_pool", find(text, "{start:"), "10.0.0.200",
           "10.0.0.250")


# --- known gaps (reported to the lead) -------------------------------------------------------


@pytest.mark.parametrize(("old", "new"), [
    ("switch: sw1, first_port: 10", "switch: sw9, first_port: 10"),
    ("profile: storage", "profile: stroage"),
])
def test_a_broken_group_does_not_also_orphan_its_nodes(small_text: str, old: str,
                                                       new: str) -> None:
    text, _ = edit(small_text, old, new)
    orphans = [str(p) for p in problems_of(text) if "is not in any node group" in p.message]
    assert orphans == []


# --- whole-inventory properties --------------------------------------------------------------


def test_all_errors_are_reported_in_one_run_sorted_by_line(small_text: str) -> None:
    text = small_text
    expected: list[tuple[str, str]] = []

    def bad(old: str, new: str, code: str, path: str) -> None:
        nonlocal text
        text, _ = edit(text, old, new)
        expected.append((code, path))

    bad("ib-b: {purpose: ipoib, cidr: 10.2.1.0/24", "ib-b: {purpose: ipoib, cidr: 10.2.0.0/16",
        "overlap", "networks.ib-b.cidr")
    bad("gateway: 10.1.0.1,", "gateway: 10.9.0.1,", "outside_network", "networks.prov.gateway")
    bad("hosts: gpu-[03-04]", "hosts: gpu-[02-04]", "duplicate", "node_groups.part-b.hosts")
    bad("tbox2: {ib_switch: ib2}", "tbox2: {ib_switch: ib2, default: true}", "invalid",
        "slurm.partitions.tbox2.default")
    bad("replicas: 2", "replicas: 5", "replicas", "mkv.arrays.data.replicas")
    bad('ib_guid: "0x1070fd0300000003"', 'ib_guid: "0x1070fd0300000001"', "duplicate_guid",
        "nodes.gpu-03.ib_guid")
    bad("serial: GPU0004", "serial: GPU0003", "duplicate_serial", "nodes.gpu-04.serial")
    bad('bmc_mac: "52:54:00:01:00:68"', 'bmc_mac: "01:00:5e:01:00:68"', "mac_multicast",
        "nodes.gpu-04.bmc_mac")
    bad("hardware: {gpus: 8,", "hardware: {gpus: 4,", "hardware_mismatch",
        "nodes.gpu-04.hardware.gpus")
    bad('stor-1: {serial: STOR0001, mac: "52:54:00:00:00:97"',
        'stor-1: {serial: STOR0001, mac: "52:54:00:00:00:9"', "mac_format", "nodes.stor-1.mac")
    bad("stor-2: {serial: STOR0002,", "stor-2: {serial: STOR0002, port: {prov: 99},",
        "port_range", "nodes.stor-2.port.prov")

    problems = problems_of(text)
    got = {(p.code, p.path) for p in problems}
    missing = [e for e in expected if e not in got]
    assert not missing, "not reported: " + ", ".join(map(str, missing)) + "\ngot:\n" + \
        "\n".join(map(str, problems))
    keys = [(p.pos.line, p.pos.col) for p in problems]
    assert keys == sorted(keys)
    assert all(p.pos.file == FILE for p in problems)


def test_all_schema_errors_are_reported_in_one_run(small_text: str) -> None:
    text = small_text
    for old, new in (("vlan: 10,", "vlan: 0,"), ("memory_gb: 128", "memory_gb: lots"),
                     ("    read_gbps: 20\n", "    read_gbps: 20\n    colour: blue\n"),
                     ("serial: STOR0001", "serial: 7"), ("profile: storage", "profile: Storage")):
        text, _ = edit(text, old, new)
    problems = problems_of(text)
    assert [p.path for p in problems] == [
        "networks.bmc.vlan", "profiles.storage.memory_gb", "profiles.storage.colour",
        "node_groups.storage.profile", "nodes.stor-1.serial",
    ]


def test_problems_are_frozen_and_deduplicated(small_text: str) -> None:
    text, _ = edit(small_text, "serial: GPU0002", "serial: GPU0001")
    problems = problems_of(text)
    assert len(problems) == len(set(problems))


def test_the_small_fixture_is_valid(small_text: str) -> None:
    inv = parse(small_text, FILE)
    assert sorted(inv.nodes) == ["gpu-01", "gpu-02", "gpu-03", "gpu-04", "head-01", "stor-1",
                                 "stor-2"]


def test_the_default_site_inventory_is_valid() -> None:
    inv = load_inventory(ROOT / "inventory.yaml")
    assert set(inv.nodes) == set(inv.raw.nodes)
    assert inv.nodes


# --- InfiniBand subnet managers ---------------------------------------------------------------


def test_sm_hosts_must_be_cabled_to_the_fabric(small_text: str) -> None:
    text, _ = edit(small_text, "ib2: {kind: infiniband, model: NVIDIA QM8700, ports: 40, "
                   "speed_gbps: 200, subnet_manager: true}",
                   "ib2: {kind: infiniband, model: NVIDIA QM8790, ports: 40, speed_gbps: 200, "
                   "sm_hosts: [gpu-03, gpu-01]}")
    at = find(text, "gpu-01]")
    expect(text, "mismatch", "switches.ib2.sm_hosts[1]", at, "gpu-01", "ib2")


def test_sm_hosts_get_opensm_in_their_pillar(small_text: str) -> None:
    from fleet.render.pillar import render

    text, _ = edit(small_text, "ib2: {kind: infiniband, model: NVIDIA QM8700, ports: 40, "
                   "speed_gbps: 200, subnet_manager: true}",
                   "ib2: {kind: infiniband, model: NVIDIA QM8790, ports: 40, speed_gbps: 200, "
                   "sm_hosts: [gpu-03]}")
    files = render(parse(text, FILE))
    assert yaml.safe_load(files["pillar/nodes/gpu-03.sls"])["node"]["infiniband"] == {
        "subnet_manager": True}
    assert yaml.safe_load(files["pillar/nodes/gpu-04.sls"])["node"]["infiniband"] == {
        "subnet_manager": False}


# --- the apt cache and the installer media (salt/provisioning aptcache.sls, media.sls) --

MIRROR = "mirror: http://10.1.0.10:3142/archive.ubuntu.com/ubuntu"


def test_apt_urls_through_the_cache_share_its_port(small_text: str) -> None:
    new = MIRROR + ", security_mirror: http://10.1.0.10:3143/security.ubuntu.com/ubuntu"
    text, at = edit(small_text, MIRROR, new, mark="http://10.1.0.10:3143")
    first = find(text, "http://10.1.0.10:3142/archive")
    expect(text, "mismatch", "site.apt.security_mirror", at, "port 3143",
           "site.apt.mirror's port 3142", ref(first), "one port")


@pytest.mark.parametrize("url, says", [
    ("http://10.1.0.10:3142/ubuntu", "names the upstream host"),
    ("https://10.1.0.10:3142/archive.ubuntu.com/ubuntu", "plain HTTP"),
    ("http://head-01:3142/HTTPS///", "names the upstream host"),
])
def test_an_apt_url_through_the_cache_in_acng_syntax(small_text: str, url: str,
                                                     says: str) -> None:
    text, at = edit(small_text, MIRROR, f"mirror: {url}", mark=url)
    expect(text, "invalid", "site.apt.mirror", at, url, says)


def test_the_apt_cache_port_is_not_nginx_port(small_text: str) -> None:
    url = "http://10.1.0.10/archive.ubuntu.com/ubuntu"
    text, at = edit(small_text, MIRROR, f"mirror: {url}", mark=url)
    expect(text, "duplicate_port", "site.apt.mirror", at, "port 80 on head-01",
           "nginx", "apt-cacher-ng")


def test_an_apt_url_elsewhere_is_not_through_the_cache(small_text: str) -> None:
    text, _ = edit(small_text, MIRROR, "mirror: http://archive.ubuntu.com/ubuntu")
    parse(text, FILE)  # the lab's direct archive: valid


def test_an_image_mirror_on_the_heads_nginx_is_files_not_the_cache(small_text: str) -> None:
    """A Debian installer image's mirror served by head-01's nginx (the PXE test bed's
    caching proxy of deb.debian.org) is valid and gets no apt-cacher-ng remap."""
    image = {"type": "debian-preseed", "kernel": "images/debian-12/linux",
             "initrd": "images/debian-12/initrd.gz", "mirror": "http://10.1.0.10/debian"}
    inv = parse(small_text, FILE, (json.dumps({"site": {"images": {"debian-12": image}}}),
                                   "overlay.yaml"))
    site = inv.raw.site
    prov = inv.nodes[site.provisioning_host]
    (url,) = [u for u in aptcache.classify(site, prov) if u.path[1] == "images"]
    assert not url.through and url.error is None
    remaps = aptcache.pillar(site, prov)["remaps"]
    assert isinstance(remaps, list)
    assert "http://10.1.0.10/debian" not in [r["upstream"] for r in remaps]


def test_an_apt_url_that_would_break_the_cache_config_is_refused(small_text: str) -> None:
    """A ';' (the Remap- line's separator) or '#' is refused by the URL type already;
    what a URL allows but a Remap- word does not (',', '!', '@') is refused by the cache
    rule, at the mirror's position."""
    for bad in (";file:///etc", "#x"):
        quoted = MIRROR.replace(": ", ": '")
        text, _ = edit(small_text, MIRROR, f"{quoted}{bad}'")
        assert any(p.path == "site.apt.mirror" for p in problems_of(text)), bad
    for bad in (",x", "!x", "@x"):
        url = f"http://10.1.0.10:3142/archive.ubuntu.com/ubuntu{bad}"
        text, at = edit(small_text, MIRROR, f"mirror: '{url}'", mark="'")
        expect(text, "invalid", "site.apt.mirror", at, "Remap- line")


def test_the_kernel_is_under_images(small_text: str) -> None:
    old = "kernel: images/ubuntu-24.04/vmlinuz"
    text, at = edit(small_text, old, "kernel: boot/vmlinuz", mark="boot/")
    expect(text, "invalid", "site.install.kernel", at, "boot/vmlinuz", "images/")


@pytest.mark.parametrize("url", [
    "http://10.1.0.11/images/ubuntu.iso",           # another host
    "http://10.1.0.10/iso/ubuntu.iso",              # not under /images/
    "http://10.1.0.10/images/ubuntu%20x.iso",       # not a plain file name
    "http://10.1.0.10/images/ubuntu-24.04/vmlinuz",  # the kernel itself
])
def test_the_iso_is_served_from_images(small_text: str, url: str) -> None:
    old = "iso_url: http://10.1.0.10/images/ubuntu-24.04.1-live-server-amd64.iso"
    text, at = edit(small_text, old, f"iso_url: {url}", mark=url)
    expect(text, "invalid", "site.install.iso_url", at, url)


# --- MTU per link ----------------------------------------------------------------------------


@pytest.mark.parametrize(("old", "new", "net", "mtu"), [
    ("vlan: 20, mtu: 9000}", "vlan: 20, mtu: 9216}", "prov", 9216),
    ("vlan: 20, mtu: 9000}", "vlan: 20, mtu: 576}", "prov", 576),
    ("cidr: 10.2.0.0/24, mtu: 2044}", "cidr: 10.2.0.0/24, mtu: 4092}", "ib-a", 4092),
    ("cidr: 10.2.0.0/24, mtu: 2044}", "cidr: 10.2.0.0/24, mtu: 65520, ipoib_mode: connected}",
     "ib-a", 65520),
])
def test_each_link_takes_the_mtus_of_its_range(small_text: str, old: str, new: str, net: str,
                                               mtu: int) -> None:
    """Ethernet up to 9216 (jumbo frames), IPoIB datagram up to 4092, connected up to
    65520 (the rows of single_edits.yaml show one byte more refused)."""
    text, _ = edit(small_text, old, new)
    assert parse(text, FILE).raw.networks[net].mtu == mtu


@pytest.mark.parametrize("mtu", [9217, 65520])
def test_an_ethernet_mtu_above_jumbo_frames_is_refused(small_text: str, mtu: int) -> None:
    text, at = edit(small_text, "vlan: 20, mtu: 9000}", f"vlan: 20, mtu: {mtu}}}", mark=str(mtu))
    expect(text, "mtu_range", "networks.prov.mtu", at, str(mtu), "9216")


def test_a_direct_upstream_that_no_remap_line_can_hold_is_refused(small_text: str) -> None:
    """Every upstream the inventory names gets a Remap- line, one that nodes fetch
    directly (not through the cache) too: one that cannot be a word of it is refused at
    its position, not dropped from the cache's list unsaid (found by test_hostile: a Salt
    repository URL ending in '&&')."""
    old = "salt: {master: head-01}"
    url = "https://packages.example/saltproject-deb&&"
    text, at = edit(small_text, old, f"salt: {{master: head-01, repo: '{url}'}}", mark="'")
    expect(text, "invalid", "site.salt.repo", at, "Remap- line")
