"""runner.py's link-speed against a FAKE sysfs tree (no 100G NIC or InfiniBand HCA here):
files laid out as the kernel lays /sys/class/net and /sys/class/infiniband, the runner
given their root. And what the master sends it: the site node's MAC and HCA GUID."""

from __future__ import annotations

import argparse
from pathlib import Path

from discover.sites import ROOT
from fleet.burnin import remote
from fleet.burnin.runner import link_speed
from fleet.inventory.load import load_inventory

MAC = "0c:42:a1:93:40:14"  # tbox-001's boot NIC in the site inventory
GUID = "0x1070fd0300106355"  # its HCA


def _net(root: Path, name: str, mac: str, speed: str | None, state: str = "up",
         kind: str = "1", physical: bool = True) -> None:
    d = root / "class" / "net" / name
    d.mkdir(parents=True)
    if physical:
        (d / "device").mkdir()
    (d / "address").write_text(mac + "\n")
    (d / "type").write_text(kind + "\n")
    (d / "operstate").write_text(state + "\n")
    if speed is not None:  # a down link's speed file fails to read (EINVAL): absent here
        (d / "speed").write_text(speed + "\n")


def _hca(root: Path, name: str, guid: str, ports: dict[str, tuple[str, str]]) -> None:
    d = root / "class" / "infiniband" / name
    d.mkdir(parents=True)
    g = guid[2:]
    (d / "node_guid").write_text(":".join(g[i:i + 4] for i in range(0, 16, 4)) + "\n")
    for port, (rate, state) in ports.items():
        p = d / "ports" / port
        p.mkdir(parents=True)
        (p / "rate").write_text(rate + "\n")
        (p / "state").write_text(state + "\n")


def _tinybox(root: Path, prov_speed: str | None = "100000", prov_state: str = "up",
             ib: tuple[str, str] = ("200 Gb/sec (4X HDR)", "4: ACTIVE")) -> None:
    _net(root, "lo", "00:00:00:00:00:00", None, kind="772", physical=False)
    _net(root, "enp65s0f0np0", MAC, prov_speed, prov_state)
    _net(root, "enp65s0f1np1", "0c:42:a1:93:40:15", "100000")  # the second port, spare
    _net(root, "ibp1s0", "00:00:10:87:fe:80", "200000", kind="32")  # IPoIB: not Ethernet
    _hca(root, "mlx5_0", "0x0c42a10300934014", {"1": ("100 Gb/sec (4X EDR)", "4: ACTIVE")})
    _hca(root, "mlx5_1", GUID, {"1": ib})


def _run(root: Path, *links: str) -> tuple[bool, dict[str, float], str | None]:
    return link_speed(argparse.Namespace(sysfs=str(root), link=list(links)))


PLANNED = (f"prov,ethernet,100,{MAC}", f"ib,infiniband,200,{GUID}")


def test_links_at_their_planned_speed_pass(tmp_path: Path) -> None:
    _tinybox(tmp_path)
    ok, figures, why = _run(tmp_path, *PLANNED)
    assert (ok, why) == (True, None)
    assert figures == {"links": 2.0, "prov_gbps": 100.0, "ib_gbps": 200.0,
                       "link_gbps_min": 100.0}


def test_a_slow_ethernet_link_fails_with_both_figures(tmp_path: Path) -> None:
    _tinybox(tmp_path, prov_speed="25000")
    ok, figures, why = _run(tmp_path, *PLANNED)
    assert not ok and why == "prov (enp65s0f0np0) at 25 Gb/s, planned 100 Gb/s"
    assert figures["prov_gbps"] == 25.0


def test_a_down_link_fails(tmp_path: Path) -> None:
    _tinybox(tmp_path, prov_speed=None, prov_state="down")
    ok, _, why = _run(tmp_path, *PLANNED)
    assert not ok and why == "prov (enp65s0f0np0) down, planned 100 Gb/s"


def test_a_half_rate_or_inactive_ib_port_fails(tmp_path: Path) -> None:
    """HDR cabled at EDR (a bad cable or a port forced down), and a port not ACTIVE. The
    other HCA (mlx5_0, an EDR one) is never taken for the planned GUID."""
    _tinybox(tmp_path, ib=("100 Gb/sec (4X EDR)", "4: ACTIVE"))
    ok, _, why = _run(tmp_path, *PLANNED)
    assert not ok and why == "ib (mlx5_1/1) at 100 Gb/s, planned 200 Gb/s"
    other = tmp_path / "other"
    _tinybox(other, ib=("200 Gb/sec (4X HDR)", "2: INIT"))
    ok, _, why = _run(other, *PLANNED)
    assert not ok and why == "ib (mlx5_1/1) down, planned 200 Gb/s"


def test_a_nic_whose_mac_is_nowhere_fails(tmp_path: Path) -> None:
    _tinybox(tmp_path)
    ok, _, why = _run(tmp_path, "prov,ethernet,100,0c:42:a1:00:00:01", PLANNED[1])
    assert not ok and why == "prov: no ethernet port with 0c:42:a1:00:00:01"


def test_without_an_id_the_fastest_free_port_of_the_kind_is_judged(tmp_path: Path) -> None:
    """A NIC the inventory has no MAC for: the ports the others own are never taken."""
    _tinybox(tmp_path)
    ok, figures, _ = _run(tmp_path, f"prov,ethernet,100,{MAC}", "data,ethernet,100,-",
                          "ib,infiniband,200,-")
    assert ok and figures["data_gbps"] == 100.0 and figures["ib_gbps"] == 200.0
    ok, _, why = _run(tmp_path, f"prov,ethernet,100,{MAC}", "data,ethernet,100,-",
                      "more,ethernet,100,-")
    assert not ok and why == "more: no ethernet port left"
    ok, _, why = _run(tmp_path, "prov,ethernet,200,-")
    assert not ok and why == ("prov (enp65s0f0np0) at 100 Gb/s, planned 200 Gb/s (no MAC "
                              "or GUID planned: the fastest free port)")


def test_a_nic_named_as_the_kernel_names_it_is_found_by_name(tmp_path: Path) -> None:
    _tinybox(tmp_path, prov_speed="10000")
    ok, _, why = _run(tmp_path, "enp65s0f0np0,ethernet,100,-")
    assert not ok and why == "enp65s0f0np0 (enp65s0f0np0) at 10 Gb/s, planned 100 Gb/s"


def test_the_master_sends_the_nodes_mac_and_guid() -> None:
    inv = load_inventory(ROOT / "inventory.yaml")
    node = inv.nodes["tbox-001"]
    assert remote.links(node.profile, node) == [
        "--link", f"prov,ethernet,100,{MAC}", "--link", f"ib,infiniband,200,{GUID}"]
    assert remote.links(node.profile, None) == [
        "--link", "prov,ethernet,100,-", "--link", "ib,infiniband,200,-"]
