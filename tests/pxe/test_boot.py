"""PXE end to end: BIOS and UEFI guests booted from the rendered pxe/ tree (conftest.py).

Every assertion reads dnsmasq's log (DHCP and TFTP), nginx's access log, or (for the disk
boot) the guest's serial console.
"""

from __future__ import annotations

import json
import re

from support.pxebed import ABSENT_IMAGE, DEBIAN_IMAGE, LATE_IMAGE, UNKNOWN_MAC, Bed
from support.pxelab import LOCAL_DISK_MARK

KERNEL, INITRD = f"/images/{DEBIAN_IMAGE}/linux", f"/images/{DEBIAN_IMAGE}/initrd.gz"


def _acked(bed: Bed, node: str) -> bool:
    """dnsmasq leased the node its inventory address and hostname."""
    return _first_stage(bed, node) is not None


def _first_stage(bed: Bed, node: str) -> tuple[set[str], str] | None:
    """The tags and boot file of the firmware's (first) acknowledged DHCP exchange."""
    n = bed.inv.nodes[node]
    log = bed.dhcp()
    ack = re.search(rf": (\d+) DHCPACK\(\S+\) {re.escape(str(n.address))} {n.mac} "
                    rf"{n.hostname}$", log, re.M)
    if ack is None:
        return None
    xid = ack.group(1)
    tags = re.findall(rf": {xid} tags: (.*)$", log, re.M)
    boot = re.findall(rf": {xid} sent size: *\d+ option: 67 bootfile-name +(\S+)", log)
    return set(tags[-1].split(", ")) if tags else set(), boot[-1] if boot else ""


def _installer_data(bed: Bed) -> set[tuple[str, str]]:
    return {(c, p) for _t, c, p in bed.fetched() if p.startswith("/hosts/")}


def test_bios_guest_gets_its_address_first_stage_and_own_script(bed: Bed) -> None:
    # SeaBIOS + QEMU's iPXE NIC ROM: already iPXE, so it is sent boot.ipxe directly (a
    # plain PXE ROM would get undionly.kpxe first: the `tag:bios,tag:!ipxe` line)
    tags, boot = _first_stage(bed, "gpu-01") or (set(), "")
    assert {"known", "bios", "ipxe"} <= tags
    assert boot == "http://10.1.0.10/boot.ipxe"
    assert bed.fetched("gpu-01")[:3] == [
        ("http", bed.ip("gpu-01"), "/boot.ipxe"),
        ("http", bed.ip("gpu-01"), "/state/52-54-00-00-00-65.ipxe"),
        ("http", bed.ip("gpu-01"), KERNEL)]


def test_bios_install_fetches_kernel_initrd_then_its_own_preseed(bed: Bed) -> None:
    assert "bios-install" in bed.done, "the BIOS installer never fetched its preseed in time"
    paths = bed.paths("gpu-01")
    assert paths.index(KERNEL) < paths.index(INITRD) < paths.index("/hosts/gpu-01/preseed.cfg")


def test_uefi_guest_gets_shim_grub_own_config_then_installer(bed: Bed) -> None:
    tags, boot = _first_stage(bed, "gpu-02") or (set(), "")
    assert {"known", "efi64"} <= tags and "ipxe" not in tags
    assert boot == "bootx64.efi"
    tftp = [p for t, _c, p in bed.fetched("gpu-02") if t == "tftp"]
    # shim (Secure Boot chain), the signed network GRUB, its config, this MAC's link,
    # then the installer (over TFTP: Debian's signed GRUB has no HTTP); after a failed load
    # GRUB reboots (test_grub_reboots_...), so the last GRUB start is the one that counts
    assert tftp[:1] == ["/bootx64.efi"]
    i = len(tftp) - 1 - tftp[::-1].index("/grubx64.efi")
    assert tftp[i + 1:i + 5] == ["/grub/grub.cfg", "/state/grub.cfg-52:54:00:00:00:66",
                                 KERNEL, INITRD]
    assert "uefi-install" in bed.done, "the UEFI installer never fetched its preseed in time"
    assert "/hosts/gpu-02/preseed.cfg" in bed.paths("gpu-02")


def test_each_installer_fetched_only_its_own_data(bed: Bed) -> None:
    assert _installer_data(bed) == {(bed.ip("gpu-01"), "/hosts/gpu-01/preseed.cfg"),
                                    (bed.ip("gpu-02"), "/hosts/gpu-02/preseed.cfg"),
                                    (bed.ip("stor-2"), "/hosts/stor-2/preseed.cfg")}


def test_switched_node_boots_its_disk_and_fetches_no_installer(bed: Bed) -> None:
    assert _acked(bed, "gpu-03")
    assert bed.paths("gpu-03") == ["/boot.ipxe", "/state/52-54-00-00-00-67.ipxe"]
    assert LOCAL_DISK_MARK in bed.guests["bios-local"].console()


def test_switch_changed_only_that_node(bed: Bed) -> None:
    assert bed.fleet_pxe[3].startswith("gpu-03 (52:54:00:00:00:67): install -> local")
    modes = {n["node"]: n["mode"] for n in json.loads(bed.fleet_pxe[-1])["nodes"]}
    assert modes["gpu-01"] == modes["gpu-02"] == "install"
    assert modes["gpu-03"] == modes["gpu-04"] == "local"
    # and on the wire: the nodes still armed installed
    assert KERNEL in bed.paths("gpu-01") and KERNEL in bed.paths("gpu-02")


def test_uefi_local_fetches_no_installer(bed: Bed) -> None:
    assert _acked(bed, "gpu-04")
    assert bed.paths("gpu-04") == ["/bootx64.efi", "/bootx64.efi", "/grubx64.efi",
                                   "/grub/grub.cfg", "/state/grub.cfg-52:54:00:00:00:68"]


def test_unknown_mac_gets_no_lease_and_no_boot_file(bed: Bed) -> None:
    log = bed.dhcp()
    assert f"{UNKNOWN_MAC} ignored" in log
    lines = [ln for ln in log.splitlines() if UNKNOWN_MAC in ln]
    assert not [ln for ln in lines if re.search(r"DHCP(OFFER|ACK)|bootfile|sent ", ln)]
    known = {str(n.address) for n in bed.inv.nodes.values()}
    assert {c for _t, c, _p in bed.fetched()} <= known


def test_uefi_ipxe_node_never_armed_boots_locally(bed: Bed) -> None:
    # OVMF with the NIC's iPXE EFI ROM: straight to boot.ipxe; no link for this node
    tags, boot = _first_stage(bed, "stor-1") or (set(), "")
    assert {"known", "efi64", "ipxe"} <= tags and boot == "http://10.1.0.10/boot.ipxe"
    ip = bed.ip("stor-1")
    assert [(r.path, r.status) for r in bed.http() if r.client == ip] == [
        ("/boot.ipxe", 200), ("/state/52-54-00-00-00-97.ipxe", 404)]
    # exit 1 hands back to the firmware, which may go on to its own PXE entry (shim,
    # GRUB: no link there either); nothing of an installer in any case
    assert not [p for p in bed.paths("stor-1") if p.startswith(("/images/", "/hosts/"))]


def test_grub_reboots_into_pxe_when_the_initrd_fails(bed: Bed) -> None:
    """stor-2's initrd is withheld until GRUB has failed to load it once (conftest.py):
    GRUB must not boot the kernel alone (it would panic) but reboot; the firmware
    PXE-boots again and this time the installer comes up."""
    late = f"images/{LATE_IMAGE}/initrd.gz"
    misses = bed.tftp_misses("stor-2", late)
    assert len(misses) == 1
    log = bed.dhcp()
    ip, mac = bed.ip("stor-2"), bed.inv.nodes["stor-2"].mac
    after = log[misses[-1].end():]
    # the reboot: a new DHCP exchange and shim again, then the initrd that is now there
    assert re.search(rf"DHCPACK\(\S+\) {re.escape(ip)} {mac}", after)
    sent = re.findall(rf"sent \S+?(/bootx64\.efi|/{re.escape(late)}) to {re.escape(ip)}$",
                      after, re.M)
    assert sent[:1] == ["/bootx64.efi"] and f"/{late}" in sent
    # each boot loaded the kernel, and the kernel never ran without its initrd
    kernels = re.findall(rf"sent \S+/images/{DEBIAN_IMAGE}/linux to {re.escape(ip)}$", log,
                         re.M)
    assert len(kernels) == 2
    assert "uefi-retry" in bed.done, "the retried installer never fetched its preseed in time"
    console = bed.guests["uefi-retry"].console()
    assert "Kernel panic" not in console


def test_ipxe_reboots_when_the_initrd_fails_instead_of_booting_the_old_disk(bed: Bed) -> None:
    """spare-01's image has no initrd: install.ipxe must reboot (the guest runs with
    -no-reboot, so QEMU exits) rather than return to boot.ipxe, whose local-disk
    fallback would boot the old system (this guest's disk prints LOCAL_DISK_MARK)."""
    ip = bed.ip("spare-01")
    assert [(r.path, r.status) for r in bed.http() if r.client == ip] == [
        ("/boot.ipxe", 200), ("/state/52-54-00-00-00-c9.ipxe", 200), (KERNEL, 200),
        (f"/images/{ABSENT_IMAGE}/initrd.gz", 404)]
    assert "bios-fail" in bed.done, "the guest did not reset after the failed initrd"
    assert LOCAL_DISK_MARK not in bed.guests["bios-fail"].console()
