"""Discovery end to end on the PXE bed (docs/discovery.md): a machine the inventory does not
know PXE-boots the commissioning environment through the rendered dnsmasq and iPXE,
reports to the real `fleet endpoint --discover`, and powers itself off; `fleet discover`
matches it to the planned node on its switch port, and `fleet discover accept` writes the
facts into inventory.yaml, every other byte kept. Then a second unknown machine, UEFI
(OVMF, the boot tests' files), boots it through the Secure Boot chain the installs use:
shim, the archive's signed GRUB, the rendered grub/commission.cfg (chosen by the DHCP
server's mark for unknown MACs), reports and powers off, on the same bed (dnsmasq, nginx,
endpoint: no second bring-up).

The bed (its own network namespace, beside the boot tests' bed): the small inventory with a
commissioning pool on the provisioning network, a profile that fits the QEMU machine (one
socket, one core, 2 GiB: a real profile's figures would fail the accept's validation, as
they must) and a group of one planned node, new-01, whose port plan puts its boot NIC on
sw1 port 30. dnsmasq and nginx serve the rendered pxe/ tree; the commissioning kernel and
initramfs are the real image (`make commission-image`, FLEET_COMMISSION_IMAGE).

Stand-ins, named:
- THE SWITCH PORT IS A STAND-IN: the host's real lldpd, in the namespace, sends LLDP on the
  guest's tap with sw1's name and the port ``ethernet1/1/30`` (the Dell OS10 name) as a
  locally assigned port id and as the port description (lldpd cannot send another
  interface's name as an ifname id), as the switch would on the port the machine is
  plugged into.
- The machine is a QEMU guest (TCG here) with a 32 MiB disk of random bytes, which must be
  unchanged afterwards, and a DMI serial of the test's; it has no BMC, so the BMC MAC typed
  from its label is kept (the accept refuses a new entry without one:
  tests/discover/test_accept.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fleet.inventory.load import load_inventory
from support import beds, pxelab
from support.pxebed import DEBIAN_IMAGE, SMALL, overlay_text
from support.pxelab import Netns

IMAGE = os.environ.get("FLEET_COMMISSION_IMAGE")
MAC = "52:54:00:fe:00:1e"  # in no node's entry: dnsmasq's `known` misses it
NODE = "new-01"
PORT_ID = "ethernet1/1/30"  # sw1 port 30: new-01's planned port (first_port below)
SWITCH = "sw1"
UEFI_MAC = "52:54:00:fe:00:2f"  # the UEFI machine: in no node's entry either
UEFI_PORT_ID = "ethernet1/1/31"  # a port no node is planned on: it stays unmatched
UEFI_SERIAL = "FLEETQEMU0002"
KNOWN = "gpu-04"  # a node of the small inventory, never armed: its UEFI boot must not commission
BOOT_TIMEOUT = float(os.environ.get("FLEET_DISCOVER_TIMEOUT", "900"))

PROFILE = """\
  qemu:
    vendor: QEMU
    model: Standard PC
    cpu: {model: QEMU Virtual CPU, sockets: 1, cores_per_socket: 1, threads_per_core: 1}
    memory_gb: 2
    disks:
      - {role: boot, kind: sata-ssd, size_gb: 1, match: {size: smallest}}
    nics:
      prov: {kind: ethernet, speed_gbps: 1}
    bmc: {kind: idrac8, protocol: redfish, user: root, password_secret: bmc-dell}
"""
GROUP = """\
  arriving:
    hosts: new-01
    profile: qemu
    roles: []
    nics:
      prov: {network: prov, ip_base: 10.1.0.190, switch: sw1, first_port: 30}
      bmc: {network: bmc, ip_base: 10.0.0.190, switch: mgmt1, first_port: 30}
"""
# the planned entry as typed from the labels at the loading dock, one MAC wrong (so the
# machine is unknown to dnsmasq), with a comment of its own; its report replaces the facts
ENTRY = """\
  # new-01: racked 2026-12-05, facts typed from its labels (to be replaced by its report)
  new-01: {state: planned, serial: LABEL0001, mac: "52:54:00:00:00:be",
           bmc_mac: "52:54:00:01:00:be"}
"""
SERIAL = "FLEETQEMU0001"  # the guest's DMI serial (QEMU -smbios)
POOL = "dhcp_pool: {start: 10.1.0.200, end: 10.1.0.250}"


def inventory_text() -> str:
    text = SMALL.read_text(encoding="utf-8")
    prov = re.search(r"^  prov: \{purpose: provisioning, .*\}$", text, re.M)
    assert prov, "tests/fixtures/small.yaml: the prov network's one-line entry moved"
    text = text.replace(prov.group(0), prov.group(0)[:-1] + f",\n         {POOL}}}")
    for section, add in (("profiles:\n", PROFILE), ("node_groups:\n", GROUP),
                         ("nodes:\n", ENTRY)):
        assert text.count(f"\n{section}") == 1, section
        text = text.replace(f"\n{section}", f"\n{section}{add}")
    return text


@dataclass
class Discovered:
    work: Path
    inventory: Path
    before: str  # the inventory's text before the accept
    qemu_rc: int | None
    seconds: float  # power-on to power-off
    console: str
    disk_unchanged: bool
    leases: Path
    endpoint_url: str
    ns: Netns  # the bed, up for the module: the UEFI machine boots on it too
    dns_log: Path
    sockdir: Path  # lldpd's sockets and configs
    accel: str


@dataclass
class UefiDiscovered:
    qemu_rc: int | None
    seconds: float  # power-on to power-off
    console: str
    tftp: list[str]  # what dnsmasq's TFTP sent it, in order (paths under the TFTP root)
    report: dict[str, Any] | None  # the report the endpoint kept for its MAC
    disk_unchanged: bool
    known_tftp: list[str]  # what TFTP sent the known UEFI machine, beside it
    known_missed: bool  # it asked for its own /state/ link (none: never armed)


def fleet(d: Discovered | Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    work = d.work if isinstance(d, Discovered) else d
    env = {**os.environ, "PYTHONPATH": str(pxelab.ROOT / "tools")}
    return subprocess.run([sys.executable, "-m", "fleet", *args, "-i",
                           str(work / "inventory.yaml")], env=env, text=True,
                          capture_output=True, check=check)


def lldpd_conf(tap: str, port_id: str = PORT_ID) -> str:
    # a frame each second, so that the guest need not wait a switch's 30 s, and a switch's
    # TTL (about 100 s, not 1 s x the default hold of 4): a guest under TCG on a loaded
    # host can miss frames for longer than 4 s, and its neighbour must not age out then
    return (f"configure system hostname {SWITCH}\n"
            "configure lldp tx-interval 1\n"
            "configure lldp tx-hold 100\n"
            f"configure ports {tap} lldp portidsubtype local {port_id} "
            f"description {port_id}\n")


def start_lldpd(ns: Netns, tap: str, sockdir: Path, name: str, port_id: str,
                log: Path) -> pxelab.Proc:
    """lldpd on TAP as the switch port PORT_ID (THE SWITCH PORT IS A STAND-IN)."""
    # lldpd's own lldpcli, which applies the config, must reach its socket after lldpd
    # dropped to _lldpd: not under pytest's 0700 directories
    (sockdir / f"{name}.conf").write_text(lldpd_conf(tap, port_id))
    return pxelab.Proc(ns.cmd("lldpd", "-d", "-I", tap, "-u", sockdir / f"{name}.sock",
                              "-O", sockdir / f"{name}.conf"), log)


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory,
          pytestconfig: pytest.Config) -> Iterator[Discovered]:
    if not IMAGE:
        pytest.skip("DISCOVERY END TO END NOT RUN: FLEET_COMMISSION_IMAGE is not set (build "
                    "the image with `make commission-image`; `make test-pxe` builds and "
                    "sets it)")
    say = beds.progress(pytestconfig, "discover")
    work = tmp_path_factory.mktemp("discover")
    inventory = work / "inventory.yaml"
    inventory.write_text(inventory_text(), encoding="utf-8")
    (work / "overlay.yaml").write_text(overlay_text(work))
    inv = load_inventory(inventory, work / "overlay.yaml")
    beds.render_pxe(inv, work)
    assert (work / "pxe/http/commission.ipxe").is_file(), "no commissioning boot rendered"
    accel = beds.boot_files(work, DEBIAN_IMAGE)
    for name in ("vmlinuz", "initrd.img"):
        (work / "images/commission").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(IMAGE) / name, work / "images/commission" / name)
    disk = work / "disk.img"
    disk.write_bytes(os.urandom(32 * 1024 * 1024))
    disk_sum = hashlib.sha256(disk.read_bytes()).hexdigest()
    (work / "salt").mkdir()
    (work / "salt/master").write_text(f"pki_dir: {work / 'pki'}\n")
    leases = work / "dnsmasq.leases"
    prov = inv.nodes[inv.raw.site.provisioning_host]
    port = inv.raw.site.salt.reinstall_port
    sockdir = Path(tempfile.mkdtemp(prefix="fleet-lldpd-"))
    sockdir.chmod(0o755)
    with Netns(f"fleet-disc-{os.getpid()}", prov.boot_nic,
               f"{prov.address}/{prov.prov.cidr.prefixlen}") as ns:
        dns, dns_log = pxelab.start_dnsmasq(ns, work / "pxe/dnsmasq/dnsmasq.conf", work, leases)
        web, _ = pxelab.start_nginx(ns, work, root=work / "pxe/http", state=work / "state",
                                    images=work / "images", listen=str(prov.address))
        endpoint = pxelab.Proc(ns.cmd(
            "env", f"PYTHONPATH={pxelab.ROOT / 'tools'}", sys.executable, "-m", "fleet",
            "endpoint", "--discover", "--leases", leases, "--discover-state",
            work / "reports", "--state-dir", work / "reinstall", "--pxe-state",
            work / "state", "--pxe-root", work / "pxe", "--salt-config", work / "salt",
            "-i", inventory, "--overlay", work / "overlay.yaml", "-v"), work / "endpoint.out")
        lldpd: pxelab.Proc | None = None
        guest: pxelab.Guest | None = None
        try:
            assert pxelab.wait_for(lambda: "serving on" in (work / "endpoint.out").read_text()
                                   or not endpoint.alive(), 120) and endpoint.alive(), \
                (work / "endpoint.out").read_text()
            start = time.monotonic()
            guest = pxelab.start_guest(ns, work, "commission", MAC, "bios", accel,
                                       disk=disk, memory_mb=2048,
                                       extra=("-smbios", f"type=1,serial={SERIAL}"))
            tap = ns.taps[-1]
            lldpd = start_lldpd(ns, tap, sockdir, "lldpd", PORT_ID, work / "lldpd.out")
            say(f"commissioning guest {MAC} booting ({accel}); the switch port stand-in: "
                f"lldpd on {tap} as {SWITCH} {PORT_ID}")
            pxelab.wait_for(lambda: not guest.proc.alive(), BOOT_TIMEOUT, step=2)
            seconds = time.monotonic() - start
            rc = guest.proc.p.poll()
            say(f"commissioning guest ended after {seconds:.0f} s (qemu exit {rc})")
            url = f"http://{prov.address}:{port}/v1/discover/{MAC.replace(':', '-')}"
            # (the namespace and the endpoint stay up for the module: the forged report's
            # test posts inside it)
            yield Discovered(work, inventory, inventory.read_text(encoding="utf-8"), rc,
                             seconds, guest.console(),
                             hashlib.sha256(disk.read_bytes()).hexdigest() == disk_sum,
                             leases, url, ns, dns_log, sockdir, accel)
        finally:
            if guest is not None:
                guest.proc.stop()
            for p in (lldpd, endpoint, web, dns):
                if p is not None:
                    p.stop()
            shutil.rmtree(sockdir, ignore_errors=True)


def test_the_machine_boots_commissioning_reports_and_powers_off(found: Discovered) -> None:
    assert found.qemu_rc == 0, (f"the guest did not power off within {BOOT_TIMEOUT:g} s "
                                f"(qemu exit {found.qemu_rc}); console:\n{found.console[-3000:]}")
    assert "fleet: commissioning" in found.console or "commission" in found.console, \
        found.console[-2000:]
    reports = list((found.work / "reports").glob("*"))
    assert reports, f"no report kept; endpoint log:\n{(found.work / 'endpoint.out').read_text()}"
    lease = found.leases.read_text()
    assert MAC in lease, f"dnsmasq leased nothing to {MAC}:\n{lease}"
    print(f"commissioning: power-on to power-off {found.seconds:.0f} s")


def test_its_disk_is_untouched(found: Discovered) -> None:
    assert found.disk_unchanged, "the commissioning environment wrote to the machine's disk"


def test_fleet_discover_matches_it_to_the_planned_node_by_its_switch_port(
        found: Discovered) -> None:
    proc = fleet(found, "discover", "list", "--reports", str(found.work / "reports"),
                 "--json", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(proc.stdout)["reports"]
    assert [(r["mac"], r["node"], r["by"], r["port"]) for r in rows] == \
        [(MAC, NODE, "port", f"{SWITCH}:30")], rows


def test_accept_writes_the_facts_and_keeps_every_other_byte(found: Discovered) -> None:
    proc = fleet(found, "discover", "accept", NODE, "--reports",
                 str(found.work / "reports"), "--json", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["written"] is True
    after = found.inventory.read_text(encoding="utf-8")
    old, new = found.before.splitlines(keepends=True), after.splitlines(keepends=True)
    entry = next(i for i, line in enumerate(old) if line.startswith(f"  {NODE}:"))
    # every line before the entry (its comment included) and after it, byte for byte
    assert new[:entry] == old[:entry]
    tail = len(old) - entry - 2  # the entry is two lines
    assert new[len(new) - tail:] == old[entry + 2:]
    changed = "".join(new[entry:len(new) - tail])
    assert MAC in changed and SERIAL in changed and "state: burn-in" in changed, changed
    assert "LABEL0001" not in changed and "52:54:00:00:00:be" not in changed, changed
    assert "52:54:00:01:00:be" in changed, changed  # no BMC answered: the label's is kept
    # the edit validates, and the planned node moved on
    assert fleet(found, "validate", check=False).returncode == 0


def test_a_report_from_an_address_not_leased_to_the_mac_is_refused(found: Discovered) -> None:
    ns = f"fleet-disc-{os.getpid()}"
    kept = json.loads(next((found.work / "reports").glob("*.json")).read_text())["report"]
    # from the provisioning host's own address in the namespace: no lease names it
    proc = subprocess.run(["ip", "netns", "exec", ns, "curl", "-s", "-o", "/dev/null",
                           "-w", "%{http_code}", "-X", "POST", "--data-binary", "@-",
                           "-H", "Content-Type: application/json", found.endpoint_url],
                          input=json.dumps(kept).encode(), capture_output=True, check=False)
    assert proc.stdout.decode() == "403", (proc.stdout, proc.stderr)


def lease_of(leases: Path, mac: str) -> str | None:
    """The address dnsmasq's leases file gives MAC (expiry, MAC, address, ...)."""
    for line in leases.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[1] == mac:
            return fields[2]
    return None


@pytest.fixture(scope="module")
def found_uefi(found: Discovered, pytestconfig: pytest.Config) -> Iterator[UefiDiscovered]:
    """The UEFI machine on the BIOS machine's bed, after it (its tests come last). It may
    reboot (GRUB's config reboots to PXE after a failed TFTP load): QEMU exits only when
    it powers off."""
    say = beds.progress(pytestconfig, "discover")
    work = found.work
    disk = work / "uefi-disk.img"
    disk.write_bytes(os.urandom(32 * 1024 * 1024))
    disk_sum = hashlib.sha256(disk.read_bytes()).hexdigest()
    start = time.monotonic()
    guest = pxelab.start_guest(found.ns, work, "commission-uefi", UEFI_MAC, "uefi",
                               found.accel, disk=disk, memory_mb=2048, reboots=True,
                               extra=("-smbios", f"type=1,serial={UEFI_SERIAL}"))
    tap = found.ns.taps[-1]
    known = load_inventory(found.work / "inventory.yaml", work / "overlay.yaml").nodes[KNOWN]
    # beside it, on the same network: a known machine, which the site's grub.cfg (with the
    # commissioning check) must send to its own /state/ link as before
    other = pxelab.start_guest(found.ns, work, "known-uefi", known.mac, "uefi", found.accel)
    miss = re.compile(rf"dnsmasq-tftp\[\d+\]: file \S+/state/grub\.cfg-{re.escape(known.mac)} "
                      rf"not found for {re.escape(str(known.address))}$", re.M)
    lldpd = start_lldpd(found.ns, tap, found.sockdir, "lldpd-uefi", UEFI_PORT_ID,
                        work / "lldpd-uefi.out")
    say(f"UEFI commissioning guest {UEFI_MAC} booting (OVMF, {found.accel}); the switch "
        f"port stand-in: lldpd on {tap} as {SWITCH} {UEFI_PORT_ID}")
    try:
        pxelab.wait_for(lambda: not guest.proc.alive(), BOOT_TIMEOUT, step=2)
        seconds = time.monotonic() - start
        rc = guest.proc.p.poll()
        say(f"UEFI commissioning guest ended after {seconds:.0f} s (qemu exit {rc})")
        missed = pxelab.wait_for(lambda: bool(miss.search(found.dns_log.read_text(
            errors="replace"))), 300, step=2)
        other.proc.stop()
        addr = lease_of(found.leases, UEFI_MAC)
        tftp_root = str(work / "pxe" / "tftp")
        sent = [(path.removeprefix(tftp_root), client) for path, client in
                re.findall(r"dnsmasq-tftp\[\d+\]: sent (\S+) to (\S+)",
                           found.dns_log.read_text(errors="replace"))]
        kept = [json.loads(f.read_text())["report"] for f in (work / "reports").glob("*.json")]
        yield UefiDiscovered(
            rc, seconds, guest.console(),
            [path for path, client in sent if client == addr],
            next((r for r in kept if r["boot_mac"] == UEFI_MAC), None),
            hashlib.sha256(disk.read_bytes()).hexdigest() == disk_sum,
            [path for path, client in sent if client == str(known.address)], missed)
    finally:
        guest.proc.stop()
        other.proc.stop()
        lldpd.stop()


def test_a_uefi_machine_commissions_through_shim_and_the_signed_grub(
        found_uefi: UefiDiscovered) -> None:
    u = found_uefi
    assert u.qemu_rc == 0, (f"the UEFI guest did not power off within {BOOT_TIMEOUT:g} s "
                            f"(qemu exit {u.qemu_rc}); console:\n{u.console[-3000:]}")
    # the Secure Boot chain, then GRUB's commissioning config (the DHCP server's mark),
    # never a per-MAC state link nor iPXE
    chain = ["/bootx64.efi", "/grubx64.efi", "/grub/grub.cfg", "/grub/commission.cfg",
             "/images/commission/vmlinuz", "/images/commission/initrd.img"]
    sent = iter(u.tftp)
    assert all(p in sent for p in chain), u.tftp  # each, in this order
    assert not [p for p in u.tftp if "state/" in p or "ipxe" in p], u.tftp
    assert f"fleet: commissioning {UEFI_MAC}" in u.console, u.console[-3000:]
    print(f"UEFI commissioning: power-on to power-off {u.seconds:.0f} s")


def test_the_uefi_machine_reports_its_facts_and_leaves_its_disk(
        found_uefi: UefiDiscovered) -> None:
    report = found_uefi.report
    assert report is not None, "no report kept for the UEFI machine"
    assert report["dmi"]["serial"] == UEFI_SERIAL
    [boot] = [n for n in report["nics"] if n["mac"] == UEFI_MAC]
    assert boot["lldp"]["chassis_name"] == SWITCH, boot
    assert boot["lldp"]["port_id"] == UEFI_PORT_ID, boot
    assert found_uefi.disk_unchanged, "the commissioning environment wrote to the disk"


def test_a_known_uefi_machine_beside_it_is_not_commissioned(
        found_uefi: UefiDiscovered) -> None:
    """The site's grub.cfg with the commissioning check: a known MAC has no DHCP mark
    (GRUB says so) and goes on to its own /state/ link, as on a site without a pool."""
    assert found_uefi.known_missed, f"{KNOWN} never asked for its /state/ link: " \
        f"{found_uefi.known_tftp}"
    assert "/grub/grub.cfg" in found_uefi.known_tftp, found_uefi.known_tftp
    assert not [p for p in found_uefi.known_tftp if "commission" in p], found_uefi.known_tftp
