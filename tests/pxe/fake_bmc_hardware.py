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
from pathlib import Path
from typing import Any

from support import pxelab


class Hardware(pxelab.PowerAgent):
    """A diskless guest that PXE-boots its NIC."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(pxelab.Netns(args.netns, args.bridge, ""), Path(args.work))
        self.args = args

    def launch(self, system: dict[str, Any], name: str) -> tuple[pxelab.Proc, dict[str, Any]]:
        firmware = "uefi" if system.get("boot_mode", "UEFI") == "UEFI" else "bios"
        guest = pxelab.start_guest(self.ns, self.work, name, self.args.mac, firmware,
                                   self.args.accel)
        return guest.proc, {"firmware": firmware}


def main() -> None:
    ap = argparse.ArgumentParser()
    for opt in ("--port", "--netns", "--bridge", "--work", "--mac", "--accel"):
        ap.add_argument(opt, required=True)
    args = ap.parse_args()
    pxelab.serve_hardware(int(args.port), Hardware(args))


if __name__ == "__main__":
    main()
