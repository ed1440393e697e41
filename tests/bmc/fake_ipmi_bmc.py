"""A fake IPMI BMC for tests: pyghmi's ``fakebmc`` (user admin, password password), with the
boot flags it receives kept as sent (the stock one drops the EFI bit) and power resets
counted, so that tests can read both back with ipmitool.

Run: python fake_ipmi_bmc.py --port P [--power on|off]
"""

from __future__ import annotations

import argparse
from typing import Any

from pyghmi.cmd.fakebmc import FakeBmc


class RecordingFakeBmc(FakeBmc):  # type: ignore[misc]
    def __init__(self, authdata: dict[str, str], port: int, power: str) -> None:
        super().__init__(authdata, port)
        self.powerstate = power
        self.boot_flags = [0x00, 0x00, 0x00, 0x00, 0x00]
        self.resets = 0

    def set_system_boot_options(self, request: dict[str, Any], session: Any) -> None:
        if request["data"][0] == 5:
            self.boot_flags = list(request["data"][1:6])
            print(f"boot flags {bytes(self.boot_flags).hex()}", flush=True)
        session.send_ipmi_response()

    def get_system_boot_options(self, request: dict[str, Any], session: Any) -> None:
        if request["data"][0] == 5:
            session.send_ipmi_response(data=[1, 5, *self.boot_flags])
        else:
            session.send_ipmi_response(code=0x80)

    def power_reset(self) -> None:
        self.resets += 1
        print(f"power reset {self.resets}", flush=True)

    def power_on(self) -> None:
        self.powerstate = "on"
        print("power on", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--power", default="off", choices=["on", "off"])
    args = ap.parse_args()
    bmc = RecordingFakeBmc({"admin": "password"}, args.port, args.power)  # binds the port
    print("ready", flush=True)
    bmc.listen()


if __name__ == "__main__":
    main()
