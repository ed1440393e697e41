"""The FAKE BMC's "hardware" for the PXE and VM tests: receives the external notifications
of sushy-tools' fake driver (tests/bmc/fake_redfish_bmc.py ``--notify``) and acts them out
on one QEMU guest in the test's network namespace (pxelab.PowerAgent: Power On starts the
guest, a Restart restarts it, Off stops it). Two machines:

- without ``--disk`` (the reinstall VM test, tests/pxe): a diskless guest that PXE-boots
  its NIC, firmware by the system's boot mode (UEFI -> OVMF, else SeaBIOS);
- with ``--disk QCOW2`` (the full-install test, tests/vm): a UEFI guest whose disk (virtio,
  /dev/vda) and OVMF NVRAM are kept across power cycles; the NIC boots first, then the
  disk, so every boot is a PXE boot and the node's boot mode decides (install: the
  installer; local: GRUB's local script chainloads the disk's shim). It has no
  ``-no-reboot``: the installer's reboot happens in QEMU, unseen here, and the serial
  console (``guest-N.serial``) goes on across it.

Run (inside the namespace, where the fake BMC can reach it), with tests/ on PYTHONPATH:
    python fake_bmc_hardware.py --port P --netns NS --bridge BR --work DIR --mac MAC
        --accel tcg|kvm [--disk QCOW2 [--smp N] [--memory MB]]
Prints ``ready`` once listening; every notification and action goes to DIR/hardware.jsonl.
Ends the guest when it ends (SIGTERM).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from support import pxelab


class PxeGuest(pxelab.PowerAgent):
    """A diskless guest that PXE-boots its NIC."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(pxelab.Netns(args.netns, args.bridge, ""), Path(args.work))
        self.args = args

    def launch(self, system: dict[str, Any], name: str) -> tuple[pxelab.Proc, dict[str, Any]]:
        firmware = "uefi" if system.get("boot_mode", "UEFI") == "UEFI" else "bios"
        guest = pxelab.start_guest(self.ns, self.work, name, self.args.mac, firmware,
                                   self.args.accel)
        return guest.proc, {"firmware": firmware}


class DiskGuest(pxelab.PowerAgent):
    """A UEFI guest with a disk that it keeps, and its NVRAM, across power cycles."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(pxelab.Netns(args.netns, args.bridge, ""), Path(args.work))
        self.args = args
        self.tap: str | None = None
        self.nvram = self.work / "guest.vars.fd"

    def argv(self, name: str) -> list[str]:
        if self.tap is None:
            self.tap = self.ns.tap()
        if not self.nvram.exists():
            shutil.copyfile(pxelab.OVMF_VARS, self.nvram)
        serial = self.work / f"{name}.serial"
        return ["qemu-system-x86_64", "-accel", self.args.accel, "-smp", str(self.args.smp),
                "-m", str(self.args.memory), "-machine", "q35", "-display", "none",
                "-nodefaults", "-serial", f"file:{serial}",
                "-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={pxelab.OVMF_CODE}",
                "-drive", f"if=pflash,format=raw,unit=1,file={self.nvram}",
                "-netdev", f"tap,id=n0,ifname={self.tap},script=no,downscript=no",
                # the firmware's own PXE (shim, GRUB), not the NIC's iPXE EFI ROM
                "-device", f"virtio-net-pci,netdev=n0,mac={self.args.mac},bootindex=1,romfile=",
                "-drive", f"file={self.args.disk},format=qcow2,if=none,id=d0,cache=unsafe",
                "-device", "virtio-blk-pci,drive=d0,bootindex=2"]

    def launch(self, system: dict[str, Any],
               name: str) -> tuple[pxelab.Proc, dict[str, Any]] | None:
        if system.get("boot_mode", "UEFI") != "UEFI":
            self.log(event="refused", why="only UEFI is modelled with a disk")
            return None
        proc = pxelab.Proc(self.ns.cmd(*self.argv(name)), self.work / f"{name}.qemu.out")
        return proc, {"firmware": "uefi", "serial": str(self.work / f"{name}.serial")}


def main() -> None:
    ap = argparse.ArgumentParser()
    for opt in ("--port", "--netns", "--bridge", "--work", "--mac", "--accel"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--disk", help="a qcow2 disk: the disk machine (tests/vm)")
    ap.add_argument("--smp", default="2")
    ap.add_argument("--memory", default="1536")
    args = ap.parse_args()
    pxelab.serve_hardware(int(args.port), DiskGuest(args) if args.disk else PxeGuest(args))


if __name__ == "__main__":
    main()
