"""The FAKE hardware behind the fake Redfish BMC (fake_redfish_bmc.py ``--hardware FILE``):
the parts sushy-tools' emulator does not model (a serial, DIMMs, drive serials, the BMC's
own NIC), kept in its fake driver's system data beside the NICs it does model, and shown
where a real BMC shows them:

- the system: ``SerialNumber`` and ``Model``;
- ``Systems/<id>/Memory`` and one member per DIMM (``CapacityMiB``; 0: an empty slot,
  ``Status.State`` Absent);
- the drives (sushy's static storage, one controller ``1``), their ``SerialNumber``;
- the manager: ``EthernetInterfaces`` with the BMC's MAC.

``POST /_fake/hardware`` with a JSON object changes the fake driver's system data (keys
``serial``, ``model``, ``dimms`` [MiB...], ``drives`` {id: serial}, ``bmc_mac``, ``macs``
[MAC...]: the system's NICs): a swapped board, a pulled DIMM, a new NIC, as hardware
would change under a real BMC.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

StartResponse = Callable[..., Any]
Environ = dict[str, Any]


def rewritten(app: Callable[..., Iterable[bytes]], env: Environ, start: StartResponse,
              change: Callable[[str, bytes], bytes]) -> Iterable[bytes]:
    """``app``'s answer with its body passed through ``change(status, body)``, its
    Content-Length made to fit: one way for every FAKE layer over the emulator."""
    held: list[Any] = []

    def hold(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        held[:] = [status, headers, exc_info]
        return lambda _data: None

    body = b"".join(app(env, hold))
    status, headers, exc_info = held
    body = change(status, body)
    headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
    start(status, [*headers, ("Content-Length", str(len(body)))], exc_info)
    return [body]
App = Callable[[Environ, StartResponse], Iterable[bytes]]
KEYS = ("serial", "model", "dimms", "drives", "bmc_mac")


def storage_config(uuid: str, drives: dict[str, str]) -> dict[str, Any]:
    """sushy-tools' static storage and drives for the system: one controller, the drives."""
    return {
        "SUSHY_EMULATOR_STORAGE": {uuid: [{
            "Id": "1", "Name": "Local Storage Controller",
            "StorageControllers": [{"MemberId": "0", "Name": "Contoso Integrated RAID",
                                    "SpeedGbps": 12}],
            "Drives": list(drives)}]},
        "SUSHY_EMULATOR_DRIVES": {(uuid, "1"): [
            {"Id": d, "Name": f"Drive {d}", "CapacityBytes": 960 << 30, "Protocol": "NVMe"}
            for d in drives]},
    }


class HardwareLayer:
    def __init__(self, app: App, uuid: str, systems: Callable[[], Any]) -> None:
        self.app, self.uuid, self.systems = app, uuid, systems
        self.system = f"/redfish/v1/Systems/{uuid}"
        self.manager = f"/redfish/v1/Managers/{uuid}"

    def data(self) -> dict[str, Any]:
        return dict(self.systems()._get(self.uuid))

    def __call__(self, env: Environ, start: StartResponse) -> Iterable[bytes]:
        path, method = env.get("PATH_INFO", "").rstrip("/"), env["REQUEST_METHOD"]
        if path == "/_fake/hardware" and method == "POST":
            body = json.loads(env["wsgi.input"].read(int(env.get("CONTENT_LENGTH") or 0)))
            changes = {k: body[k] for k in KEYS if k in body}
            if "macs" in body:
                changes["nics"] = [{"mac": m, "ip": "127.0.0.1"} for m in body["macs"]]
            self.systems()._update(self.uuid, **changes)
            return self.json(start, {k: self.data().get(k) for k in (*KEYS, "nics")})
        if method != "GET":
            return self.app(env, start)
        hw = self.data()
        if path == f"{self.system}/Memory":
            return self.json(start, {"Members": [
                {"@odata.id": f"{path}/DIMM{i}"} for i in range(len(hw.get("dimms", [])))]})
        if m := re.fullmatch(rf"{self.system}/Memory/DIMM(\d+)", path):
            dimms = hw.get("dimms", [])
            size = dimms[int(m[1])] if int(m[1]) < len(dimms) else None
            if size is None:
                return self.json(start, {"error": {"message": "no such DIMM"}}, "404 Not Found")
            return self.json(start, {"Id": f"DIMM{m[1]}", "CapacityMiB": size, "Status": {
                "State": "Enabled" if size else "Absent"}})
        if path == f"{self.manager}/EthernetInterfaces":
            return self.json(start, {"Members": [{"@odata.id": f"{path}/1"}]})
        if path == f"{self.manager}/EthernetInterfaces/1":
            return self.json(start, {"Id": "1", "MACAddress": hw.get("bmc_mac")})
        edit: dict[str, Any] = {}
        if path == self.system:
            edit = {"SerialNumber": hw.get("serial"), "Model": hw.get("model")}
        elif path == self.manager:
            edit = {"EthernetInterfaces": {"@odata.id": f"{path}/EthernetInterfaces"}}
        elif m := re.fullmatch(rf"{self.system}/Storage/1/Drives/(.+)", path):
            edit = {"SerialNumber": hw.get("drives", {}).get(m[1])}
        return self.edited(env, start, edit) if edit else self.app(env, start)

    def edited(self, env: Environ, start: StartResponse, edit: dict[str, Any]
               ) -> Iterable[bytes]:
        def change(status: str, body: bytes) -> bytes:
            return json.dumps({**json.loads(body), **edit}).encode() \
                if status.startswith("200") else body

        return rewritten(self.app, env, start, change)

    def json(self, start: StartResponse, doc: Any, status: str = "200 OK") -> Iterable[bytes]:
        body = json.dumps(doc).encode()
        start(status, [("Content-Type", "application/json"),
                       ("Content-Length", str(len(body)))])
        return [body]
