"""The commissioning image, booted for real in QEMU: its /init leases the boot NIC
(QEMU's user-mode DHCP), fleet-commission reports the guest's hardware to the real
endpoint and the guest powers itself off; the disk it was given is unchanged, byte for
byte. Needs the image (`make commission-image`, then FLEET_COMMISSION_IMAGE=build/commission).

Stand-ins, named: QEMU's user-mode network NATs the guest, so its requests arrive from
127.0.0.1 and the leases file gives the guest's MAC that address (dnsmasq's lease of the
real address is what tests/discover/test_inbox.py checks); no switch answers LLDP."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from discover.endpoint import commission_endpoint
from fleet.discover import store
from support.pxelab import kvm_works

IMAGE = os.environ.get("FLEET_COMMISSION_IMAGE")
MAC = "52:54:00:fe:00:01"

pytestmark = pytest.mark.skipif(
    not IMAGE, reason="FLEET_COMMISSION_IMAGE is not set: build the image with `make "
                      "commission-image` and point it at build/commission (NOT RUN)")


def test_the_image_reports_and_powers_off_without_touching_the_disk(tmp_path: Path) -> None:
    image = Path(IMAGE or "")
    qemu = shutil.which("qemu-system-x86_64")
    assert qemu, "qemu-system-x86_64 is not installed (tools/install-vm-deps.sh)"
    server, reports = commission_endpoint(tmp_path, MAC, "127.0.0.1", 10.0)
    disk = tmp_path / "disk.img"
    disk.write_bytes(os.urandom(64 * 1024 * 1024))
    before = hashlib.sha256(disk.read_bytes()).hexdigest()
    port = server.server_address[1]
    append = (f"console=ttyS0 fleet.report=http://10.0.2.2:{port}/v1/discover/"
              f"{MAC.replace(':', '-')} fleet.boot_mac={MAC} fleet.lldp_wait=4")
    argv = [qemu, "-m", "2048", "-smp", "2", "-nographic", "-no-reboot",
            "-kernel", str(image / "vmlinuz"), "-initrd", str(image / "initrd.img"),
            "-append", append, "-smbios", "type=1,serial=QEMU-SN-0001,product=fleet-vm",
            "-netdev", "user,id=n0", "-device", f"virtio-net-pci,netdev=n0,mac={MAC}",
            "-drive", f"file={disk},if=virtio,format=raw"]
    # KVM where it boots this kernel (a nested host may refuse it), else TCG
    work = tmp_path / "probe"
    work.mkdir()
    accel = "kvm" if kvm_works(work, image / "vmlinuz") else "tcg"
    argv[1:1] = ["-accel", accel]
    t0 = time.monotonic()
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    finally:
        server.stop()
    took = time.monotonic() - t0
    console = r.stdout[-4000:]
    assert r.returncode == 0, console
    assert "the master answered 200" in r.stdout, console
    got = store.load_all(reports)[MAC]
    assert isinstance(got, store.Received), got
    rep = got.report
    assert rep.dmi.serial == "QEMU-SN-0001" and rep.dmi.product == "fleet-vm"
    assert rep.boot_nic() is not None and rep.cpus.sockets >= 1
    assert [d.name for d in rep.disks] == ["vda"] and rep.disks[0].size_bytes == 64 << 20
    assert hashlib.sha256(disk.read_bytes()).hexdigest() == before
    print(f"boot to power-off ({accel}): {took:.1f} s; report "
          f"{len(rep.model_dump_json())} bytes")
