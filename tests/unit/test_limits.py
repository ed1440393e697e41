"""Limits on what `fleet validate` reads, and the network and service
rules that catch a broken (or hostile) inventory before it is rendered."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from fleet.inventory import expand
from fleet.inventory.load import MAX_INPUT_BYTES, load_inventory, parse
from fleet.problems import InventoryError, Pos, Problem
from fleet.yamlsrc import MAX_DEPTH
from support.inventory_edits import edit, expect, find, problems_of, ref

FILE = "inventory.yaml"
ROOT = Path(__file__).resolve().parents[2]
FLEET = [sys.executable, "-m", "fleet"]


# --- what is read ----------------------------------------------------------------------------


def _limit_memory() -> None:
    # a reader that does not stop at a device (/dev/zero) fails here, not on the machine
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _validate(path: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    return subprocess.run([*FLEET, "validate", "-i", str(path)], capture_output=True,
                          text=True, timeout=timeout, env=env, check=False,
                          preexec_fn=_limit_memory)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "inventory.yaml"
    os.mkfifo(fifo)
    r = _validate(fifo, timeout=30)  # a blocking open would hang until the timeout
    assert r.returncode == 4, r.stderr  # cannot be read: I/O (fleet.exitcodes)
    assert "a FIFO, not a regular file" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_device_is_refused(device: str) -> None:
    if not Path(device).exists():
        pytest.fail(f"{device} is missing on this machine")
    r = _validate(device, timeout=30)
    assert r.returncode == 4, r.stderr[-2000:]  # cannot be read: I/O
    assert f"{device}:1:1: cannot read: a device, not a regular file" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_an_oversized_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    big = tmp_path / "inventory.yaml"
    with big.open("wb") as fh:
        fh.write(b"site: {}\n")
        fh.truncate(MAX_INPUT_BYTES + 1)  # sparse: cheap to make
    with pytest.raises(InventoryError) as info:
        load_inventory(big)
    (p,) = info.value.problems
    assert p.code == "io" and "limit" in p.message, str(p)


def test_oversized_text_is_refused_by_parse_too() -> None:
    with pytest.raises(InventoryError) as info:
        parse("#" * (MAX_INPUT_BYTES + 1), FILE)
    (p,) = info.value.problems
    assert "limit" in p.message, str(p)


@pytest.mark.parametrize("open_, close", [("[", "]"), ("{a: ", "}")])
def test_deep_nesting_is_reported_with_a_position(open_: str, close: str) -> None:
    depth = 500
    text = "site: " + open_ * depth + "1" + close * depth + "\n"
    with pytest.raises(InventoryError) as info:
        parse(text, FILE)
    (p,) = info.value.problems
    assert p.code == "yaml_depth", str(p)
    assert f"more than {MAX_DEPTH} levels" in p.message
    assert p.pos.line == 1 and p.pos.col > 6 + MAX_DEPTH - 2, str(p)


def test_deep_nesting_after_an_anchor_is_reported_too() -> None:
    # an anchor sends the document to the node-tree loader, which recurses
    depth = 300
    text = "x: &a 1\nsite: " + "[" * depth + "1" + "]" * depth + "\n"
    with pytest.raises(InventoryError) as info:
        parse(text, FILE)
    assert any(p.code == "yaml_depth" and p.pos.line == 2 for p in info.value.problems), \
        "\n".join(map(str, info.value.problems))


def test_total_number_of_nodes_is_capped(small_text: str) -> None:
    # two groups under the per-group range limit, over the total one together
    half = expand.MAX_NODES // 2 + 1
    text, _ = edit(small_text, "hosts: gpu-[01-02]", f"hosts: gpu-[1-{half}]")
    text, at = edit(text, "hosts: gpu-[03-04]", f"hosts: gpx-[1-{half}]", mark="gpx")
    p = expect(text, "too_many", "node_groups.part-b.hosts", at, f"{expand.MAX_NODES:,}")
    counted = int(p.message.split(" expand to ")[1].split()[0].replace(",", ""))
    assert counted > 2 * half > expand.MAX_NODES, p.message


def test_a_huge_value_is_shortened_in_messages(small_text: str) -> None:
    value = "x" * 1_000_000
    text, at = edit(small_text, 'mac: "52:54:00:00:00:66"', f"mac: {value}", mark="xxx")
    p = expect(text, "mac_format", "nodes.gpu-02.mac", at, "1000000 characters")
    assert len(str(p)) < 400, len(str(p))


def test_a_huge_key_is_shortened_in_messages(small_text: str) -> None:
    key = "Q" * 100_000  # an explicit key: a plain one is limited to 1024 characters
    text, _ = edit(small_text, "  stor-1: {serial", f"  ? {key}\n  : {{serial")
    problems = problems_of(text)
    assert any(p.path.startswith("nodes.QQQ") for p in problems), problems
    for p in problems:
        assert len(str(p)) < 600, str(p)[:200]


def test_errors_come_in_one_order_whatever_the_hash_seed(small_text: str,
                                                         tmp_path: Path) -> None:
    # many problems at one position with one message (a group's ip_base shared by its
    # hosts, a value reported for several paths) must not fall back on set order
    problems = [Problem(Pos(FILE, 3, 4), f"nodes.n{i}.ip.prov", "same message")
                for i in range(40)]
    forward = InventoryError(problems).problems
    backward = InventoryError(problems[::-1]).problems
    assert forward == backward
    assert [p.path for p in forward] == sorted(p.path for p in problems)
    text, _ = edit(small_text, "ip_base: 10.1.0.150", "ip_base: 10.9.0.150")
    text, _ = edit(text, 'version: "22.05"', "version: x")
    inv = tmp_path / "inventory.yaml"
    inv.write_text(text)
    outputs = set()
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONPATH": str(ROOT / "tools"), "PYTHONHASHSEED": seed}
        r = subprocess.run([*FLEET, "validate", "-i", str(inv)], capture_output=True,
                           text=True, env=env, timeout=60, check=False)
        assert r.returncode == 1, r.stderr
        outputs.add(r.stderr)
    assert len(outputs) == 1, outputs


# --- network rules --------------------------------------------------------------------------


BMC_POOL = "dhcp_pool: {start: 10.0.0.200, end: 10.0.0.250}"


@pytest.mark.parametrize(("pool", "what"), [
    ("dhcp_pool: {start: 10.0.0.0, end: 10.0.0.20}", "network address 10.0.0.0"),
    ("dhcp_pool: {start: 10.0.0.200, end: 10.0.0.255}", "broadcast address 10.0.0.255"),
    ("dhcp_pool: {start: 10.0.0.1, end: 10.0.0.20}", "gateway address 10.0.0.1"),
])
def test_a_dhcp_pool_never_holds_a_special_address(small_text: str, pool: str,
                                                   what: str) -> None:
    text, at = edit(small_text, BMC_POOL, pool, mark="{start")
    found = [p for p in problems_of(text) if p.code == "in_dhcp_pool"
             and p.path == "networks.bmc.dhcp_pool" and (p.pos.line, p.pos.col) == at]
    assert any(what in p.message for p in found), "\n".join(map(str, found))


@pytest.mark.parametrize("gateway", ["10.1.0.0", "10.1.0.255"])
def test_a_gateway_is_never_the_network_or_broadcast_address(small_text: str,
                                                             gateway: str) -> None:
    text, at = edit(small_text, "gateway: 10.1.0.1,", f"gateway: {gateway},", mark=gateway)
    expect(text, "gateway", "networks.prov.gateway", at, gateway)


def test_two_networks_never_share_a_vlan(small_text: str) -> None:
    text, at = edit(small_text, "gateway: 10.1.0.1, vlan: 20", "gateway: 10.1.0.1, vlan: 10",
                    mark="vlan: 10")
    at = (at[0], at[1] + len("vlan: "))
    first = find(text, "vlan: 10,", nth=0)
    expect(text, "duplicate_vlan", "networks.prov.vlan", at, "VLAN 10", "bmc",
           ref((first[0], first[1] + 6)))


def test_master_address_may_be_the_masters_own_or_a_free_one(small_text: str) -> None:
    for addr in ("10.1.0.10", "10.1.0.5"):  # head-01's own, a free host address
        text, _ = edit(small_text, "salt: {master: head-01}",
                       f"salt: {{master: head-01, master_address: {addr}}}")
        parse(text, FILE)


def test_an_mkv_master_never_on_the_boot_http_port(small_text: str) -> None:
    end = "  provisioning_host: head-01\n"
    text, _ = edit(small_text, end, f"{end}  http_port: 3000\n")
    at = find(text, "port: 3000,")
    expect(text, "duplicate_port", "mkv.arrays.data.port", (at[0], at[1] + 6), "nginx",
           ref(find(text, "3000\n")))


@pytest.mark.parametrize(("line", "path", "says"), [
    ("http_port: 22", "site.http_port", "sshd"),
    ("http_port: 53", "site.http_port", "dnsmasq"),
    ("http_port: 6817", "site.http_port", "slurmctld"),
])
def test_two_services_never_share_a_port_of_one_host(small_text: str, line: str, path: str,
                                                     says: str) -> None:
    end = "  provisioning_host: head-01\n"
    value = line.split(": ")[1]
    text, at = edit(small_text, end, f"{end}  {line}\n", mark=value)
    expect(text, "duplicate_port", path, at, says)


def test_an_mkv_volume_never_on_slurmd_or_ssh(small_text: str) -> None:
    text, at = edit(small_text, "volume_port: 3001", "volume_port: 22", mark="22")
    p = expect(text, "duplicate_port", "mkv.arrays.data.volume_port", at, "sshd")
    assert "stor-1" in p.message
    more = [q for q in problems_of(text) if q.path == "mkv.arrays.data.volume_port"]
    assert len(more) == 1, "\n".join(map(str, more))  # once, not once per volume host
