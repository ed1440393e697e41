"""Hardware facts from a BMC (fleet.bmc.facts) against the inventory (fleet.discover.drift).

- A FAKE BMC: sushy-tools' Redfish emulator with the FAKE hardware's parts
  (tests/bmc/fake_redfish_parts.py) built from tbox-001's inventory entry: no drift; then
  its fake driver's system data changed (a swapped board serial, a pulled DIMM, another
  NIC, a swapped boot disk, a new BMC) and each is found, with both values.
- A hostile FAKE BMC (a plain HTTP server answering what each test says): values of the
  wrong type, escape sequences, oversized answers, endless collections, links elsewhere.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from discover.sites import SITE
from fleet.bmc.base import BmcAuthError
from fleet.bmc.facts import MAX_MEMBERS, TEXT, read, rows
from fleet.bmc.limits import MAX_ANSWER
from fleet.bmc.redfish import RedfishClient
from fleet.discover.drift import compare
from fleet.inventory.load import parse
from fleet.inventory.model import Node
from fleet.inventory.schema.hardware import DiskMatch
from support.bmcfakes import PASSWORD, USER, start_fake_redfish

INV = parse(SITE, "inventory.yaml")
BOOT = "S5GXNF0R123456"
OTHER_NIC = "0c:42:a1:00:00:99"


def _node() -> Node:
    """tbox-001 with its boot disk named by serial (the site's tboxes pick the largest)."""
    node = INV.nodes["tbox-001"]
    object.__setattr__(node, "boot_disk", DiskMatch(serial=BOOT))
    return node


def _parts(node: Node) -> dict[str, Any]:
    """What the FAKE hardware of a node that matches its inventory has."""
    dimms = node.profile.memory_gb // 32
    return {"serial": node.serial, "model": node.profile.model, "dimms": [32768] * dimms,
            "drives": {"0": BOOT, "1": "S5GXNF0R999999"}, "bmc_mac": node.bmc_mac.upper(),
            "macs": [node.mac, OTHER_NIC]}


def test_fake_bmc_healthy_then_each_swapped_part_is_found(tmp_path: Path) -> None:
    node = _node()
    bmc = start_fake_redfish(tmp_path, power="On", system=node.hostname,
                             hardware=_parts(node))
    try:
        client = RedfishClient(bmc.url, USER, PASSWORD)
        seen = read(client)
        f = seen.facts
        assert (f.serial, f.memory_mb, seen.dimms) == (
            node.serial, node.profile.memory_gb * 1024, node.profile.memory_gb // 32)
        assert f.macs == {node.mac, OTHER_NIC} and f.bmc_mac == node.bmc_mac
        assert f.disk_serials == {BOOT, "S5GXNF0R999999"}
        assert seen.firmware["BMC"] == "1.00"  # sushy's manager
        assert f.gpus is None and f.cpu_sockets is None  # sushy's fake driver has none
        assert any(u.startswith("Processors") for u in seen.unread)
        assert compare(node, f) == []

        dimms = [32768] * (node.profile.memory_gb // 32)
        dimms[3] = 0  # an empty slot: the DIMM pulled
        bmc.change_hardware(serial="TBP000SWAPPED", dimms=dimms, macs=[OTHER_NIC],
                            drives={"0": "S5GXNF0R000NEW", "1": "S5GXNF0R999999"},
                            bmc_mac="a8:a1:59:ff:ff:01")
        seen = read(client)
    finally:
        bmc.stop()
    drifts = {d.fact: d for d in compare(node, seen.facts)}
    assert set(drifts) == {"serial", "mac", "bmc_mac", "memory", "boot_disk"}
    assert (drifts["serial"].inventory, drifts["serial"].found) == (node.serial,
                                                                    "TBP000SWAPPED")
    gb = node.profile.memory_gb
    assert (drifts["memory"].inventory, drifts["memory"].found) == (
        f"{gb} GB (profile {node.profile_name})", f"{gb - 32} GB")
    assert drifts["mac"].found == f"not among {OTHER_NIC}"
    assert drifts["boot_disk"].found == "not among S5GXNF0R000NEW, S5GXNF0R999999"
    assert drifts["bmc_mac"].found == "a8:a1:59:ff:ff:01"
    assert seen.dimms == gb // 32 - 1
    side = {r["fact"]: r for r in rows(node, seen)}
    assert side["memory"] == {"fact": "memory", "inventory": f"{gb} GB",
                              "bmc": f"{gb - 32} GB in {gb // 32 - 1} DIMM(s)", "drift": True}
    assert side["model"]["drift"] is False


def test_fake_bmc_refusing_the_credentials_fails_the_read(tmp_path: Path) -> None:
    node = _node()
    bmc = start_fake_redfish(tmp_path, system=node.hostname, hardware=_parts(node))
    try:
        with pytest.raises(BmcAuthError):
            read(RedfishClient(bmc.url, USER, "wrong"))
    finally:
        bmc.stop()


# --- a hostile FAKE BMC ------------------------------------------------------------------

SYSTEM = "/redfish/v1/Systems/1"
ESC = "\x1b[2J\x1b]0;owned\x07\r\nFAKE ok"


class Hostile:
    """A FAKE BMC: answers each path from ``pages`` (a body: bytes, or JSON), else 404."""

    def __init__(self, pages: dict[str, Any]) -> None:
        self.pages, self.asked = pages, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # the name http.server calls
                outer.asked.append(self.path)
                page = outer.pages.get(self.path)
                body = page if isinstance(page, bytes) else json.dumps(page).encode()
                self.send_response(200 if page is not None else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    h = Hostile({"/redfish/v1/Systems": {"Members": [{"@odata.id": SYSTEM}]}})
    yield h
    h.server.shutdown()
    h.server.server_close()


def _system(**extra: Any) -> dict[str, Any]:
    return {"SerialNumber": "TBP245526371", "Memory": {"@odata.id": f"{SYSTEM}/Memory"},
            "EthernetInterfaces": {"@odata.id": f"{SYSTEM}/EthernetInterfaces"}} | extra


def _read(h: Hostile) -> Any:
    return read(RedfishClient(h.url, USER, PASSWORD))


def test_escape_laden_values_are_kept_escaped_and_bounded(hostile: Hostile) -> None:
    node = _node()
    hostile.pages |= {
        SYSTEM: _system(SerialNumber=ESC + "X" * 10_000, Model=ESC, BiosVersion=ESC,
                        Links={"ManagedBy": [{"@odata.id": "/redfish/v1/Managers/1"}]}),
        "/redfish/v1/Managers/1": {"FirmwareVersion": ESC},
        "/redfish/v1/UpdateService": {"FirmwareInventory": {"@odata.id": "/fw"}},
        "/fw": {"Members": [{"@odata.id": "/fw/1"}]},
        "/fw/1": {"Name": ESC, "Version": ESC},
    }
    seen = _read(hostile)
    assert seen.facts.serial is not None and len(seen.facts.serial) == TEXT
    doc = json.dumps(seen.as_json())
    assert "\x1b" not in doc and "\\r" not in doc.replace("\\\\r", "")
    assert seen.as_json()["serial"].startswith("\\x1b[2J")
    (drift,) = [d for d in compare(node, seen.facts) if d.fact == "serial"]
    assert "\x1b" not in drift.text and "\n" not in drift.text and "\x07" not in drift.text
    table = "\n".join(f"{r['inventory']} {r['bmc']}" for r in rows(node, seen))
    assert "\x1b" not in table and "\x07" not in table
    assert all("\x1b" not in k + v for k, v in seen.as_json()["firmware"].items())


def test_values_of_the_wrong_type_are_unknown_not_guessed(hostile: Hostile) -> None:
    hostile.pages |= {
        SYSTEM: _system(SerialNumber=245526371, Model=["x"],
                        ProcessorSummary={"Count": True},
                        MemorySummary={"TotalSystemMemoryGiB": "384"}),
        f"{SYSTEM}/Memory": {"Members": [{"@odata.id": f"{SYSTEM}/Memory/{i}"}
                                         for i in range(4)] + ["junk", {"@odata.id": 7}]},
        f"{SYSTEM}/Memory/0": {"CapacityMiB": "32768"},
        f"{SYSTEM}/Memory/1": {"CapacityMiB": True},
        f"{SYSTEM}/Memory/2": {"CapacityMiB": 32768, "Status": {"State": "Absent"}},
        f"{SYSTEM}/Memory/3": {"CapacityMiB": 32768},
        f"{SYSTEM}/EthernetInterfaces": {"Members": "all of them"},
    }
    seen = _read(hostile)
    f = seen.facts
    assert f.serial is None and seen.model is None and f.cpu_sockets is None
    assert (f.memory_mb, seen.dimms) == (32768, 1)  # only the one DIMM told as a DIMM is
    assert f.macs is None and any("EthernetInterfaces (no Members" in u for u in seen.unread)
    assert compare(_node(), replace(f, memory_mb=None)) == []  # nothing unknown compared


def test_an_oversized_answer_leaves_its_fact_unknown(hostile: Hostile) -> None:
    hostile.pages |= {SYSTEM: _system(),
                      f"{SYSTEM}/Memory": b"{" + b" " * MAX_ANSWER + b"}",
                      f"{SYSTEM}/EthernetInterfaces": {"Members": []}}
    seen = _read(hostile)
    assert seen.facts.memory_mb is None and seen.facts.serial == "TBP245526371"
    assert seen.facts.macs == frozenset()
    assert any(u.startswith("Memory (") and f"an answer of {MAX_ANSWER + 2} bytes" in u
               and "refused unread" in u for u in seen.unread), seen.unread


def test_an_endless_collection_is_read_only_to_its_bound(hostile: Hostile) -> None:
    members = [{"@odata.id": f"{SYSTEM}/Memory/{i}"} for i in range(5000)]
    hostile.pages |= {SYSTEM: _system(), f"{SYSTEM}/Memory": {"Members": members}}
    hostile.pages |= {f"{SYSTEM}/Memory/{i}": {"CapacityMiB": 1024} for i in range(5000)}
    seen = _read(hostile)
    assert seen.dimms == MAX_MEMBERS
    assert sum(p.startswith(f"{SYSTEM}/Memory/") for p in hostile.asked) == MAX_MEMBERS


def test_a_link_to_another_host_is_not_followed(hostile: Hostile) -> None:
    hostile.pages |= {SYSTEM: _system(Memory={"@odata.id": "http://203.0.113.9/steal"}),
                      f"{SYSTEM}/EthernetInterfaces": {"Members": []}}
    seen = _read(hostile)
    assert seen.facts.memory_mb is None
    assert any("203.0.113.9" in u and "refused" in u for u in seen.unread)


def test_processors_give_sockets_cores_and_a_missing_gpu(hostile: Hostile) -> None:
    """A FAKE BMC that lists its GPUs among its Processors (as GPU servers' BMCs do): one of
    the profile's GPUs gone, and an absent socket not counted."""
    node = _node()
    cpu, gpus = node.profile.cpu, node.profile.gpu
    assert gpus is not None
    procs = [{"ProcessorType": "CPU", "TotalCores": cpu.cores_per_socket}] * cpu.sockets
    procs += [{"ProcessorType": "CPU", "Status": {"State": "Absent"}}]
    procs += [{"ProcessorType": "GPU", "Model": "RTX 4090"}] * (gpus.count - 1)
    hostile.pages |= {SYSTEM: _system(Processors={"@odata.id": f"{SYSTEM}/Processors"}),
                      f"{SYSTEM}/Processors": {"Members": [
                          {"@odata.id": f"{SYSTEM}/Processors/{i}"}
                          for i in range(len(procs))]},
                      f"{SYSTEM}/EthernetInterfaces": {"Members": []}}
    hostile.pages |= {f"{SYSTEM}/Processors/{i}": p for i, p in enumerate(procs)}
    seen = _read(hostile)
    f = seen.facts
    assert (f.cpu_sockets, f.cores_per_socket, f.gpus) == (cpu.sockets, cpu.cores_per_socket,
                                                           gpus.count - 1)
    (gpu,) = [d for d in compare(node, f) if d.fact == "gpus"]
    assert (gpu.inventory, gpu.found) == (f"{gpus.count} (profile {node.profile_name})",
                                          str(gpus.count - 1))


def test_a_missing_drive_and_an_absent_one(hostile: Hostile) -> None:
    """The profile's disks against the drives present: one pulled (Absent), none left."""
    node = _node()
    want = sum(d.count for d in node.profile.disks)
    hostile.pages |= {SYSTEM: _system(Storage={"@odata.id": f"{SYSTEM}/Storage"}),
                      f"{SYSTEM}/Storage": {"Members": [{"@odata.id": f"{SYSTEM}/Storage/1"}]},
                      f"{SYSTEM}/Storage/1": {"Drives": [{"@odata.id": "/d/0"}]},
                      "/d/0": {"SerialNumber": BOOT, "Status": {"State": "Absent"}},
                      f"{SYSTEM}/EthernetInterfaces": {"Members": []}}
    seen = _read(hostile)
    assert (seen.facts.disks, seen.facts.disk_serials) == (0, frozenset())
    drifts = {d.fact: d for d in compare(node, seen.facts)}
    assert (drifts["disks"].inventory, drifts["disks"].found) == (
        f"{want} (profile {node.profile_name})", "0")
    assert drifts["boot_disk"].found == "not among no disk"
