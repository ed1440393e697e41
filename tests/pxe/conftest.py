"""The PXE end-to-end test bed (`make test-pxe`, docs/pxe.md).

One session fixture renders tests/fixtures/small.yaml (with an overlay that puts the node
groups on the Debian netboot image, two of them on copies whose initrd is withheld or
missing, adds one node, and puts the paths into a temp dir), serves the rendered
tree with dnsmasq and nginx in a network namespace, arms boot modes with `fleet pxe set`,
and boots QEMU guests with the nodes' MACs in parallel; each test then asserts one
property from dnsmasq's and nginx's logs (and a guest's serial console for the disk boot).

Runs only with FLEET_PXE=1 (root, and the packages of tools/install-pxe-deps.sh): under
plain `pytest` or `make test` every test here is reported as skipped with that reason.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fleet.inventory.load import load_inventory
from support import beds, pxelab
from support.pxebed import (
    DEBIAN_IMAGE,
    ENABLED,
    INSTALL_TIMEOUT,
    LATE_IMAGE,
    SKIP_REASON,
    SMALL,
    UNKNOWN_MAC,
    Bed,
    boot_overlay_text,
    fleet,
)
from support.pxelab import Netns

TIMINGS: dict[str, float] = {}


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        terminalreporter.write_line("PXE guests, seconds from power-on to done: " + ", ".join(
            f"{k} {v:.0f}" for k, v in sorted(TIMINGS.items(), key=lambda kv: kv[1])))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    beds.skip_unless(ENABLED, SKIP_REASON, Path(__file__).resolve().parent, items)


@pytest.fixture(scope="session")
def bed(tmp_path_factory: pytest.TempPathFactory,
        pytestconfig: pytest.Config) -> Iterator[Bed]:
    say = beds.progress(pytestconfig, "pxe")
    work = tmp_path_factory.mktemp("pxe")
    (work / "overlay.yaml").write_text(boot_overlay_text(work))
    inv = load_inventory(SMALL, work / "overlay.yaml")
    beds.render_pxe(inv, work)
    accel = beds.boot_files(work, DEBIAN_IMAGE)
    say(f"accelerator: {accel} (KVM probed with a real kernel boot)")
    disk = work / "disk.img"
    disk.write_bytes(pxelab.boot_sector(pxelab.LOCAL_DISK_MARK) + b"\0" * (1024 * 1024 - 512))

    prov = inv.nodes[inv.raw.site.provisioning_host]
    ns_name = f"fleet-pxe-{os.getpid()}"
    with Netns(ns_name, prov.boot_nic, f"{prov.address}/{prov.prov.cidr.prefixlen}") as ns:
        dns, dns_log, web, web_log = beds.serve_boot(ns, work, prov)
        b = Bed(work, inv, accel, dns_log, web_log)
        try:
            # every node armed for install, then one switched back: only it may change
            for node in ("gpu-01", "gpu-02", "gpu-03"):
                b.fleet_pxe.append(fleet(work, "pxe", "set", node, "install"))
            b.fleet_pxe.append(fleet(work, "pxe", "set", "gpu-03", "local"))
            b.fleet_pxe.append(fleet(work, "pxe", "set", "stor-2", "install"))
            b.fleet_pxe.append(fleet(work, "pxe", "set", "spare-01", "install"))
            b.fleet_pxe.append(fleet(work, "pxe", "set", "gpu-04", "local"))
            b.fleet_pxe.append(fleet(work, "pxe", "status", "--json"))
            _boot_all(b, ns, disk, say)
        finally:
            for g in b.guests.values():
                g.proc.stop()
            web.stop()
            dns.stop()
        say("timings (s after power-on): " + json.dumps({k: round(v, 1)
                                                          for k, v in b.done.items()}))
        (work / "timings.json").write_text(json.dumps(b.done, indent=2))
        TIMINGS.update(b.done)
        keep = os.environ.get("FLEET_PXE_KEEP")
        if keep:
            shutil.copytree(work, keep, dirs_exist_ok=True, symlinks=True)
        yield b


# complexity 17: one test bed's boot loop, every node's step in one place
def _boot_all(b: Bed, ns: Netns, disk: Path, log: Callable[[str], None]) -> None:  # noqa: C901
    def got(node: str, path: str) -> bool:
        return path in b.paths(node)

    def unknown_ignored() -> bool:
        return b.dhcp().count(f"{UNKNOWN_MAC} ignored") >= 2

    def start(key: str, node: str | None, firmware: str, with_disk: bool = False,
              reboots: bool = False) -> None:
        mac = b.inv.nodes[node].mac if node else UNKNOWN_MAC
        own = b.work / f"{key}.disk.img"
        if with_disk:
            shutil.copyfile(disk, own)
        b.guests[key] = pxelab.start_guest(ns, b.work, key, mac, firmware, b.accel,
                                           disk=own if with_disk else None, reboots=reboots)
        b.started[key] = time.monotonic()
        log(f"{key}: powered on ({firmware}, {mac})")

    checks = {
        "bios-install": lambda: got("gpu-01", "/hosts/gpu-01/preseed.cfg"),
        "uefi-install": lambda: got("gpu-02", "/hosts/gpu-02/preseed.cfg"),
        # its initrd appears only after GRUB failed to load it: GRUB reboots, PXE again
        "uefi-retry": lambda: got("stor-2", "/hosts/stor-2/preseed.cfg"),
        # its initrd never exists: iPXE must reboot (QEMU then exits: -no-reboot), not
        # fall back to boot.ipxe's local boot (its disk would print the marker)
        "bios-fail": lambda: not b.guests["bios-fail"].proc.alive(),
        "bios-local": lambda: pxelab.LOCAL_DISK_MARK in b.guests["bios-local"].console(),
        "unknown": unknown_ignored,
        "uefi-local": lambda: got("gpu-04", "/state/grub.cfg-52:54:00:00:00:68"),
        # never armed: no link, so boot.ipxe's fallback (nginx logs the 404)
        "uefi-ipxe-unarmed": lambda: any(r.path == "/state/52-54-00-00-00-97.ipxe"
                                         for r in b.http()),
    }
    # installers may reboot: a failed kernel/initrd load reboots into PXE (docs/pxe.md)
    start("bios-install", "gpu-01", "bios", reboots=True)
    start("uefi-install", "gpu-02", "uefi", reboots=True)
    start("bios-local", "gpu-03", "bios", with_disk=True)
    start("unknown", None, "bios")
    late = b.work / "images" / LATE_IMAGE / "initrd.gz"
    grace: dict[str, float] = {}

    def running(key: str) -> bool:
        return (key not in b.done and b.guests[key].proc.alive()
                and time.monotonic() - b.started[key] < INSTALL_TIMEOUT)

    while any(running(key) for key in b.guests) or "uefi-local" not in b.guests:
        missing = len(b.tftp_misses("stor-2", f"images/{LATE_IMAGE}/initrd.gz"))
        if not late.exists() and missing >= 1:
            late.parent.mkdir(exist_ok=True)
            late.symlink_to((b.work / "images" / DEBIAN_IMAGE / "initrd.gz").resolve())
            log(f"uefi-retry: GRUB failed to load its initrd {missing} times; initrd now there")
        for key in list(b.guests):
            g = b.guests[key]
            if key not in b.done and not g.proc.alive() and checks[key]():
                b.done[key] = time.monotonic() - b.started[key]
                log(f"{key}: done, exited")
            if not running(key):
                continue
            if key in grace:
                if time.monotonic() >= grace[key]:
                    b.done[key] = grace[key] - b.started[key]
                    g.proc.stop()
                    log(f"{key}: done, stopped")
            elif checks[key]():
                # a short grace period: whatever else it would fetch shows in the logs
                grace[key] = time.monotonic() + (0 if key.endswith("install") else 10)
        if "uefi-local" not in b.guests and not (running("bios-local") or running("unknown")):
            start("uefi-local", "gpu-04", "uefi")
            start("uefi-ipxe-unarmed", "stor-1", "uefi-ipxe")
            start("uefi-retry", "stor-2", "uefi", reboots=True)
            start("bios-fail", "spare-01", "bios", with_disk=True)
        time.sleep(2)
    for key, g in b.guests.items():
        if key not in b.done:
            log(f"{key}: NOT done after {time.monotonic() - b.started[key]:.0f}s")
        g.proc.stop()
