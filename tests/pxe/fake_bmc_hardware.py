"""The FAKE BMC's "hardware" for the reinstall VM test: receives the external notifications
of sushy-tools' fake driver (tests/bmc/fake_redfish_bmc.py ``--notify``) and acts them out
on a QEMU guest in the test's network namespace. Power On starts the guest, a Restart
(re)starts it, Off stops it; the guest PXE-boots its NIC (firmware by the system's boot
mode: UEFI -> OVMF, else SeaBIOS). Only PXE boots are modelled: the guest has no disk.

Run (inside the namespace, where the fake BMC can reach it):
    python fake_bmc_hardware.py --port P --netns NS --bridge BR --work DIR --mac MAC
        --accel tcg|kvm
Prints ``ready`` once listening; every notification and action goes to DIR/hardware.jsonl.
Ends the guest when it ends (SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pxelab


class Hardware:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.ns = pxelab.Netns(args.netns, args.bridge, "")
        self.work = Path(args.work)
        self.guest: pxelab.Guest | None = None
        self.boots = 0
        self.lock = threading.Lock()

    def log(self, **event: Any) -> None:
        with (self.work / "hardware.jsonl").open("a") as fh:
            fh.write(json.dumps({"t": time.time(), **event}) + "\n")

    def notify(self, system: dict[str, Any]) -> None:
        pending = system.get("pending_power") or {}
        want = pending.get("power_state") or system.get("power_state")
        self.log(event="notification", power_state=system.get("power_state"),
                 pending=pending.get("power_state"), boot_device=system.get("boot_device"),
                 boot_mode=system.get("boot_mode"))
        with self.lock:
            running = self.guest is not None and self.guest.proc.alive()
            if want == "Off" and running:
                self.stop("power off")
            elif want and "Restart" in want:
                self.stop("restart")
                self.start(system)
            elif want == "On" and not running:
                self.start(system)

    def start(self, system: dict[str, Any]) -> None:
        firmware = "uefi" if system.get("boot_mode", "UEFI") == "UEFI" else "bios"
        self.boots += 1
        name = f"guest-{self.boots}"
        self.guest = pxelab.start_guest(self.ns, self.work, name, self.args.mac, firmware,
                                        self.args.accel)
        self.log(event="power-on", guest=name, firmware=firmware, pid=self.guest.proc.p.pid,
                 boot_device=system.get("boot_device"))

    def stop(self, why: str) -> None:
        if self.guest is not None:
            self.guest.proc.stop()
            self.log(event="power-off", guest=self.guest.name, why=why)
            self.guest = None


def main() -> None:
    ap = argparse.ArgumentParser()
    for opt in ("--port", "--netns", "--bridge", "--work", "--mac", "--accel"):
        ap.add_argument(opt, required=True)
    args = ap.parse_args()
    pxelab.serve_hardware(int(args.port), Hardware(args))


if __name__ == "__main__":
    main()
