"""The compute section's rules that one row of single_edits.yaml cannot show, and the
roles it derives (fleet/inventory/compute.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fleet.inventory import compute
from fleet.inventory.load import parse
from support.compute_fixture import with_compute
from support.inventory_edits import FILE, Edit, edit, expect, find, problems_of, set_in_node

TABLE = Path(__file__).with_name("compute_edits.yaml")
CASES = [Edit(**{**row, "says": tuple(row.get("says", ()))})
         for row in yaml.safe_load(TABLE.read_text())]


@pytest.fixture
def text(small_text: str) -> str:
    return with_compute(small_text)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_single_edit_is_reported_at_its_value(text: str, case: Edit) -> None:
    case.check(text)


def test_the_compute_fixture_is_valid(text: str) -> None:
    inv = parse(text, FILE)
    assert inv.raw.compute is not None


def test_a_retired_code_sync_host_is_reported_at_the_field_that_names_it(
        text: str) -> None:
    old, new = set_in_node(text, "stor-1", "state: retired")
    text, _ = edit(text, old, new)
    at = find(text, "stor-1, prune_days")
    p = expect(text, "retired", "compute.codesync.host", at, "stor-1", "code sync")
    assert str(p).startswith(f"{FILE}:{at[0]}:{at[1]}: compute.codesync.host: stor-1 is retired")


def test_roles_follow_the_section(text: str) -> None:
    inv = parse(text, FILE)
    by_host = {h: compute.roles(inv.raw, n) for h, n in inv.nodes.items()}
    assert by_host["head-01"] == ["compute.valkey"]
    assert by_host["stor-1"] == ["codesync.server"]
    assert by_host["stor-2"] == []
    for gpu in ("gpu-01", "gpu-02"):
        assert by_host[gpu] == ["compute.worker", "codesync.client", "compute.triton"]
    assert by_host["gpu-03"] == by_host["gpu-04"] == []


def test_triton_off_gives_no_triton_role(text: str) -> None:
    text, _ = edit(text, "    mode: wheel\n", "    mode: 'off'\n")
    inv = parse(text, FILE)
    assert compute.roles(inv.raw, inv.nodes["gpu-01"]) == ["compute.worker", "codesync.client"]


def test_triton_groups_choose_the_workers_that_run_it(text: str) -> None:
    text, _ = edit(text, "worker_groups: [part-a]", "worker_groups: [part-a, part-b]")
    inv = parse(text, FILE)
    assert all(compute.runs_triton(inv.raw, inv.nodes[h])
               for h in ("gpu-01", "gpu-02", "gpu-03", "gpu-04"))
    text, _ = edit(text, "    mode: wheel\n", "    mode: wheel\n    groups: [part-b]\n")
    inv = parse(text, FILE)
    assert compute.roles(inv.raw, inv.nodes["gpu-01"]) == ["compute.worker", "codesync.client"]
    assert "compute.triton" in compute.roles(inv.raw, inv.nodes["gpu-03"])
    assert not compute.runs_triton(inv.raw, inv.nodes["stor-2"])


@pytest.mark.parametrize(("mode", "managed"), [("wheel", False), ("container", True)])
def test_miniray_manages_only_the_container(text: str, mode: str, managed: bool) -> None:
    """TRITON_SERVER_ENABLED: miniray's cleanup needs the docker CLI and a container named
    tritonserver, which the wheel's server is not."""
    image = "nvcr.io/nvidia/tritonserver@sha256:" + "a" * 64
    text, _ = edit(text, "    mode: wheel\n", f"    mode: {mode}\n    image: {image}\n")
    inv = parse(text, FILE)
    assert compute.miniray_manages_triton(inv.raw, inv.nodes["gpu-01"]) is managed
    assert compute.miniray_manages_triton(inv.raw, inv.nodes["gpu-03"]) is False


def test_the_cluster_networks_default_to_the_provisioning_networks(text: str) -> None:
    inv = parse(text, FILE)
    assert compute.cluster_networks(inv.raw) == ["prov"]
    assert compute.addresses_on(inv.raw, inv.nodes["head-01"]) == ["10.1.0.10"]
    text, _ = edit(text, "  valkey:\n    host: head-01",
                   "  networks: [prov, ib-a]\n  valkey:\n    host: head-01")
    inv = parse(text, FILE)
    assert compute.addresses_on(inv.raw, inv.nodes["gpu-01"]) == ["10.1.0.101", "10.2.0.1"]


def test_without_the_section_no_node_has_a_compute_role(text: str) -> None:
    start = text.index("compute:\n")
    end = text.index("\nnodes:\n")
    inv = parse(text[:start] + text[end + 1:], FILE)
    assert all(compute.roles(inv.raw, n) == [] for n in inv.nodes.values())


def test_the_central_valkey_is_on_a_cluster_network(text: str) -> None:
    # head-01 has a prov NIC only: with ib-a as the one cluster network it is on none
    text, _ = edit(text, "  valkey:\n    host: head-01",
                   "  networks: [ib-a]\n  valkey:\n    host: head-01")
    at = find(text, "head-01", line_with="    host: head-01")
    expect(text, "mismatch", "compute.valkey.host", at, "head-01", "ib-a", "Valkey")


def test_every_worker_os_has_python_3_12(text: str) -> None:
    text, _ = edit(text, "  provisioning_host: head-01",
                   "  provisioning_host: head-01\n  os: {release: '22.04'}")
    text, _ = edit(text, "worker_groups: [part-a]", "worker_groups: [part-a, part-b]")
    for i, group in enumerate(("part-a", "part-b")):
        at = find(text, group, line_with="worker_groups:")
        expect(text, "mismatch", f"compute.worker_groups[{i}]", at, group, "ubuntu-22.04",
               "Python 3.10", ">= 3.12")


def test_a_debian_12_worker_group_is_refused(text: str) -> None:
    text, _ = edit(text, "  provisioning_host: head-01",
                   "  provisioning_host: head-01\n  images:\n    bookworm: {type: debian-preseed,"
                   " kernel: images/d/linux, initrd: images/d/initrd.gz,"
                   " mirror: http://deb.debian.org/debian}")
    text, _ = edit(text, "    slurm_partition: tbox2\n",
                   "    slurm_partition: tbox2\n    image: bookworm\n")
    text, _ = edit(text, "worker_groups: [part-a]", "worker_groups: [part-a, part-b]")
    at = find(text, "part-b", line_with="worker_groups:")
    expect(text, "mismatch", "compute.worker_groups[1]", at, "debian-12", "Python 3.11")


def test_valkey_is_reachable_from_every_worker(text: str) -> None:
    # Valkey on gpu-01 with the IB networks as the cluster networks: it listens on ib-a
    # only, which part-b's nodes (ib-b) are not on
    text, _ = edit(text, "  valkey:\n    host: head-01",
                   "  networks: [ib-a, ib-b]\n  valkey:\n    host: gpu-01")
    text, _ = edit(text, "worker_groups: [part-a]", "worker_groups: [part-a, part-b]")
    at = find(text, "part-b", line_with="worker_groups:")
    host = find(text, "gpu-01", line_with="    host: gpu-01")
    p = expect(text, "unreachable", "compute.worker_groups[1]", at, "gpu-03, gpu-04",
               "Valkey on gpu-01", "(ib-a, ")
    assert f"{FILE}:{host[0]}:{host[1]}" in p.message
    assert not [q for q in problems_of(text) if q.path == "compute.worker_groups[0]"]


def test_the_code_sync_host_is_not_a_worker(text: str) -> None:
    """The NFS export's host would mount its own export: refused at the field."""
    text, _ = edit(text, "codesync: {host: stor-1,", "codesync: {host: gpu-01,")
    at = find(text, "gpu-01, prune_days")
    p = expect(text, "mismatch", "compute.codesync.host", at, "gpu-01 is a worker",
               "own NFS export")
    assert p.hint is not None and "outside the worker groups" in p.hint


def test_workers_without_a_miniray_pin_are_refused(text: str) -> None:
    """compute.miniray null: the worker role has nothing to install; named at the field."""
    start = text.index("  miniray:\n    source:")
    end = text.index("\n", text.index("sha256:", start)) + 1
    text = text[:start] + text[end:]
    problems = [p for p in problems_of(text) if p.path == "compute.miniray"]
    assert len(problems) == 1, problems
    p = problems[0]
    assert p.code == "missing" and "gpu-01, gpu-02 are miniray workers" in p.message
    assert p.hint is not None and "git archive --prefix=miniray/" in p.hint


def test_hardlink_job_copies_on_xfs_with_a_device_are_valid(text: str) -> None:
    text, _ = edit(text, "codesync: {host: stor-1, prune_days: 3}",
                   "codesync: {host: stor-1, prune_days: 3, fs: xfs, job_copy: hardlink, "
                   "device: /dev/disk/by-id/nvme-code}")
    comp = parse(text, FILE).raw.compute
    assert comp is not None
    sync = comp.codesync
    assert (sync.fs, sync.job_copy, sync.device) == ("xfs", "hardlink",
                                                     "/dev/disk/by-id/nvme-code")


def test_snapshot_job_copies_on_btrfs_are_valid(text: str) -> None:
    text, _ = edit(text, "codesync: {host: stor-1, prune_days: 3}",
                   "codesync: {host: stor-1, prune_days: 3, fs: btrfs, job_copy: snapshot}")
    comp = parse(text, FILE).raw.compute  # raises on any problem
    assert comp is not None
    assert (comp.codesync.fs, comp.codesync.job_copy) == ("btrfs", "snapshot")
