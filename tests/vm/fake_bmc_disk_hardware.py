"""The FAKE BMC's "hardware" for the full-install VM test (tests/vm, `make test-vm`): as
tests/pxe/fake_bmc_hardware.py (it receives sushy-tools' fake-driver notifications and
acts them out on one QEMU guest), but the guest has a DISK and reboots like a machine:

- one qcow2 disk on virtio-blk (the installer sees /dev/vda), kept across power cycles;
- the NIC first in the firmware's boot order, then the disk (bootindex 1, 2): every boot
  is a PXE boot, and the node's boot mode decides (install: the installer; local: GRUB's
  local script chainloads the disk's shim);
- no ``-no-reboot``: when the installer reboots, the guest reboots in place (its OVMF
  NVRAM is kept for the agent's lifetime, like a machine's), and the serial console
  (``guest-N.serial``) goes on across the reboot.

Power On starts the guest, a Restart restarts it, Off stops it; its own reboots (the
installer's, at the end of the install) happen in QEMU, unseen here.

Run (inside the namespace, where the fake BMC can reach it):
    python fake_bmc_disk_hardware.py --port P --netns NS --bridge BR --work DIR --mac MAC
        --disk QCOW2 --accel tcg|kvm [--smp N] [--memory MB]
Prints ``ready`` once listening; every notification and action goes to DIR/hardware.jsonl.
Ends the guest when it ends (SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pxe"))

import pxelab


class Hardware:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.ns = pxelab.Netns(args.netns, args.bridge, "")
        self.work = Path(args.work)
        self.guest: pxelab.Proc | None = None
        self.guest_name = ""
        self.boots = 0
        self.lock = threading.Lock()
        self.tap: str | None = None
        self.nvram = self.work / "guest.vars.fd"

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
            running = self.guest is not None and self.guest.alive()
            if want == "Off" and running:
                self.stop("power off")
            elif want and "Restart" in want:
                self.stop("restart")
                self.start(system)
            elif want == "On" and not running:
                self.start(system)

    def argv(self) -> list[str]:
        if self.tap is None:
            self.tap = self.ns.tap()
        if not self.nvram.exists():
            shutil.copyfile(pxelab.OVMF_VARS, self.nvram)
        serial = self.work / f"{self.guest_name}.serial"
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

    def start(self, system: dict[str, Any]) -> None:
        if system.get("boot_mode", "UEFI") != "UEFI":
            self.log(event="refused", why="only UEFI is modelled with a disk")
            return
        self.boots += 1
        self.guest_name = f"guest-{self.boots}"
        argv = self.ns.cmd(*self.argv())
        self.guest = pxelab.Proc(argv, self.work / f"{self.guest_name}.qemu.out")
        self.log(event="power-on", guest=self.guest_name, firmware="uefi",
                 pid=self.guest.p.pid, boot_device=system.get("boot_device"),
                 serial=str(self.work / f"{self.guest_name}.serial"))

    def stop(self, why: str) -> None:
        if self.guest is not None:
            self.guest.stop()
            self.log(event="power-off", guest=self.guest_name, why=why)
            self.guest = None


def main() -> None:
    ap = argparse.ArgumentParser()
    for opt in ("--port", "--netns", "--bridge", "--work", "--mac", "--accel", "--disk"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--smp", default="2")
    ap.add_argument("--memory", default="1536")
    args = ap.parse_args()
    hw = Hardware(args)
    pxelab.serve_hardware(int(args.port), hw)


if __name__ == "__main__":
    main()
