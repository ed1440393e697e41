"""salt/_grains/fleet_hw.py, the grain `fleet status --hardware` reads the HCA GUIDs and
disk serials from: over a STAND-IN sysfs and udev database (no HCA or NVMe disk here),
shaped as the kernel lays them out, and over this host's own /sys (whatever it has: the
grain must answer, in its shape, never fail)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from fleet.discover.drift import compare, from_grains
from fleet.inventory.load import load_inventory

ROOT = Path(__file__).resolve().parents[2]


def _grain() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fleet_hw", ROOT / "salt/_grains/fleet_hw.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_guids_and_serials_from_a_standin_sysfs(tmp_path: Path) -> None:
    g = _grain()
    sys_root, udev = tmp_path / "sys", tmp_path / "udev"
    node = load_inventory(ROOT / "inventory.yaml").nodes["tbox-001"]
    assert node.ib_guid
    hexed = node.ib_guid.removeprefix("0x")
    _write(sys_root / "class/infiniband/mlx5_0/node_guid",
           ":".join(hexed[i:i + 4] for i in range(0, 16, 4)) + "\n")
    _write(sys_root / "class/infiniband/mlx5_1/node_guid", "0000:0000:0000:0000\n")
    _write(sys_root / "block/nvme0n1/device/serial", "S5GXNF0R123456    \n")
    _write(sys_root / "block/sda/dev", "8:0\n")
    _write(udev / "b8:0", "S:disk/by-id/x\nE:ID_SERIAL_SHORT=WD-ABC123\nE:ID_BUS=ata\n")
    _write(sys_root / "block/loop0/dev", "7:0\n")
    _write(udev / "b7:0", "E:ID_SERIAL_SHORT=LOOPY\n")
    assert g.ib_guids(str(sys_root)) == [node.ib_guid.lower()]
    assert g.disk_serials(str(sys_root), str(udev)) == ["S5GXNF0R123456", "WD-ABC123"]
    facts = from_grains({"fleet_ib_guids": g.ib_guids(str(sys_root))})
    assert compare(node, facts) == []  # the inventory's own GUID, as the grain writes it


def test_this_hosts_own_sysfs() -> None:
    got = _grain().fleet_hw()
    assert set(got) == {"fleet_ib_guids", "fleet_disk_serials"}
    assert all(isinstance(v, list) and all(isinstance(s, str) for s in v)
               for v in got.values())
