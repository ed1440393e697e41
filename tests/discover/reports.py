"""A well-formed discovery report, as the commissioning script builds it, to vary."""

from __future__ import annotations

import copy
import json
from typing import Any

BOOT_MAC = "0c:42:a1:aa:00:01"
SWITCH_PORT = ("sw1", "ethernet1/1/3")  # tbox-003's planned provisioning port

GOOD: dict[str, Any] = {
    "version": 1,
    "boot_mac": BOOT_MAC,
    "dmi": {"serial": "TBPNEW0001", "product": "TinyBox Pro", "vendor": "tinygrad",
            "board": "MZ73-LM0", "board_serial": "B1"},
    "cpus": {"model": "AMD EPYC 9354", "sockets": 2, "cores_per_socket": 32,
             "threads_per_core": 2},
    "memory": {"total_mb": 393216,
               "dimms": [{"locator": f"DIMM {i}", "size_mb": 32768} for i in range(12)]},
    "disks": [{"name": "nvme0n1", "model": "Samsung PM9A3", "serial": "S1",
               "size_bytes": 1000204886016, "transport": "nvme", "smart_ok": True}],
    "nics": [
        {"name": "enp65s0f0", "mac": BOOT_MAC, "speed_mbps": 100000,
         "lldp": {"chassis_name": SWITCH_PORT[0], "chassis_id": "aa:bb:cc:00:00:01",
                  "port_id": SWITCH_PORT[1], "port_id_type": "ifname",
                  "port_descr": "tbox-003 prov"}},
        {"name": "ibp1s0", "mac": "0c:42:a1:aa:00:02", "speed_mbps": 200000},
    ],
    "pci": [{"slot": f"0000:{0x41 + i:02x}:00.0", "kind": "gpu", "vendor": "NVIDIA",
             "device": "AD102 [GeForce RTX 4090]", "link_width": 16, "link_speed": "16GT/s"}
            for i in range(8)] + [
        {"slot": "0000:01:00.0", "kind": "hca", "vendor": "Mellanox",
         "device": "MT28908 ConnectX-6", "guid": "0x1070fd0300aa0001"}],
    "bmc_mac": "a8:a1:59:aa:00:01",
}


def report(**changes: Any) -> dict[str, Any]:
    """GOOD with top-level keys replaced (a value of None deletes the key)."""
    doc = copy.deepcopy(GOOD)
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return doc


def body(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode()
