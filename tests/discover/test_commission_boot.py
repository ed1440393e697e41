"""The commissioning boot, rendered: with a pool on the provisioning network, a MAC the
inventory does not know gets a lease from it and the commissioning environment: iPXE's
script (BIOS), or shim, the signed GRUB and GRUB's commissioning config (UEFI PXE), with one
kernel line (the real `dnsmasq --test` and `grub-script-check` accept them); without one,
nothing of it is rendered and unknown MACs are ignored as before."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from discover.sites import ROOT, SITE
from fleet.discover import boot
from fleet.inventory.load import parse
from fleet.render.pxe import render
from render.test_dnsmasq import CONF, checkable_config, run_test

GRUB = "pxe/tftp/grub/grub.cfg"
COMMISSION = "pxe/tftp/grub/commission.cfg"
POOL = "    dhcp_pool: {start: 10.1.3.200, end: 10.1.3.250}  # commissioning (fleet discover)\n"


def with_pool(text: str = SITE) -> str:
    anchor = "  prov:\n    purpose: provisioning\n    cidr: 10.1.0.0/22\n"
    assert anchor in text
    return text.replace(anchor, anchor + POOL)


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return render(parse(with_pool(), "inventory.yaml"))


def test_dnsmasq_accepts_the_commissioning_config(files: dict[str, str],
                                                  tmp_path: Path) -> None:
    inv = parse(with_pool(), "inventory.yaml")
    r = run_test(checkable_config(inv, files, tmp_path))
    assert r.returncode == 0, r.stderr + r.stdout
    assert "syntax check OK" in r.stderr + r.stdout


def test_unknown_macs_get_the_pool_and_the_commissioning_boot(files: dict[str, str]) -> None:
    conf = files[CONF]
    assert "dhcp-range=set:commission,10.1.3.200,10.1.3.250,255.255.252.0,1h\n" in conf
    assert "dhcp-range=set:prov,10.1.0.0,static,255.255.252.0,infinite\n" in conf
    assert "dhcp-ignore=tag:prov,tag:!known" not in conf
    for option in ("router,10.1.0.1", "dns-server,10.1.0.10", "mtu,9000"):
        assert f"dhcp-option=tag:commission,option:{option}\n" in conf
    assert "dhcp-ignore=tag:bmc" not in conf  # the BMC pool is as it was
    boots = re.findall(r"^dhcp-boot=(.*)$", conf, flags=re.M)
    # each boot file for a firmware goes to known or unknown machines, never both
    assert "tag:ipxe,tag:known,http://10.1.0.10/boot.ipxe" in boots
    assert "tag:ipxe,tag:!known,http://10.1.0.10/commission.ipxe" in boots
    # UEFI PXE: shim (then the signed GRUB) for both, Secure Boot intact
    assert "tag:efi64,tag:!ipxe,tag:known,bootx64.efi" in boots
    assert "tag:efi64,tag:!ipxe,tag:!known,bootx64.efi" in boots
    assert "ipxe.efi" not in " ".join(b for b in boots if "efi64" in b)
    assert not [b for b in boots if b.startswith(("tag:ipxe,http", "tag:efi64,tag:!ipxe,b"))]


def test_the_commissioning_script_reports_and_powers_off(files: dict[str, str]) -> None:
    script = files["pxe/http/commission.ipxe"]
    assert script.startswith("#!ipxe\n")
    assert ("kernel http://10.1.0.10/images/commission/vmlinuz initrd=initrd "
            "fleet.report=http://10.1.0.10:8470/v1/discover/ console=tty0 "
            "console=ttyS0,115200n8 fleet.boot_mac=${mac} ") in script
    assert "initrd --name initrd http://10.1.0.10/images/commission/initrd.img" in script
    assert script.rstrip().endswith("poweroff")
    for word in ("autoinstall", "sanboot", "state/", "user-data"):
        assert word not in script


def test_without_a_pool_nothing_changes() -> None:
    out = render(parse(SITE, "inventory.yaml"))
    assert "pxe/http/commission.ipxe" not in out
    assert "pxe/tftp/grub/commission.cfg" not in out
    assert out[GRUB] == (ROOT / GRUB).read_text()
    assert "net_get_dhcp_option" not in out[GRUB]
    assert out[CONF] == (ROOT / "pxe/dnsmasq/dnsmasq.conf").read_text()
    assert "dhcp-ignore=tag:prov,tag:!known" in out[CONF]
    assert boot.pool_network(parse(SITE, "inventory.yaml")) is None


# --- UEFI PXE: shim -> signed GRUB -> grub/commission.cfg ---------------------------------

def kernel_words(line: str, command: str) -> list[str]:
    """The words after the kernel's path on a loader's kernel line."""
    words = line.strip().split(" ")
    assert words[0] == command, line
    return words[2:]


def test_only_unknown_uefi_machines_are_told_to_commission(files: dict[str, str]) -> None:
    conf = files[CONF]
    forced = re.findall(r"^dhcp-option-force=(.*)$", conf, flags=re.M)
    mark = f"{boot.DHCP_OPTION},{boot.DHCP_VALUE}"
    assert [f for f in forced if f.endswith(mark)] == [f"tag:efi64,tag:!known,{mark}"]
    assert f"{boot.DHCP_OPTION}," not in conf.replace(f"tag:efi64,tag:!known,{mark}", "")
    assert 224 <= boot.DHCP_OPTION <= 254  # RFC 3942: site-specific, no standard meaning


def test_the_site_grub_config_commissions_only_on_the_dhcp_servers_mark(
        files: dict[str, str]) -> None:
    grub = files[GRUB]
    block = ("net_get_dhcp_option fleet_boot ${net_default_interface} "
             f"{boot.DHCP_OPTION} string\n"
             f'if [ "$fleet_boot" = {boot.DHCP_VALUE} ]; then\n'
             "    configfile (tftp,10.1.0.10)/grub/commission.cfg\n"
             "fi\n")
    assert block in grub, grub
    # before any per-MAC config: an unknown MAC never reaches the state links
    assert grub.index(block) < grub.index("state/grub.cfg-")


def test_grub_commissions_with_the_one_kernel_line(files: dict[str, str]) -> None:
    inv = parse(with_pool(), "inventory.yaml")
    cfg = files[COMMISSION]
    [linux] = [line for line in cfg.splitlines() if line.strip().startswith("linux ")]
    [initrd] = [line for line in cfg.splitlines() if line.strip().startswith("initrd ")]
    assert linux.split()[1] == f"(tftp,10.1.0.10)/{boot.KERNEL}"
    assert initrd.split()[1] == f"(tftp,10.1.0.10)/{boot.INITRD}"
    # the same words as iPXE's, each loader adding only its own: the boot MAC as it names
    # it, and iPXE's initrd= (an EFI stub given GRUB's would look for a file "initrd")
    [kernel] = [line for line in files["pxe/http/commission.ipxe"].splitlines()
                if line.startswith("kernel ")]
    ipxe = kernel_words(kernel.removesuffix(" || goto failed"), "kernel")
    grub = kernel_words(linux, "linux")
    assert ipxe == ["initrd=initrd", *boot.cmdline(inv), "fleet.boot_mac=${mac}"]
    assert grub == [*boot.cmdline(inv), "fleet.boot_mac=${net_default_mac}"]
    # it installs nothing and touches no disk; a failed load reboots to PXE (a fresh GRUB),
    # never boots the disk nor the kernel without its initrd
    for word in ("autoinstall", "chainloader", "state/", "preseed", "search"):
        assert word not in cfg
    assert cfg.rstrip().endswith("reboot\n}")
    assert cfg.index("initrd (tftp") < cfg.index("boot\n") < cfg.index("reboot\n")


def test_nothing_from_the_unknown_machine_reaches_the_grub_configs(
        files: dict[str, str]) -> None:
    """Both are site files: one for every unknown machine, rendered before any boots. The
    only values GRUB expands in them are its own (the NIC's MAC as hex pairs, the
    interface's name, a load's status) and the DHCP server's mark, which is compared,
    quoted, never run; no client-sent DHCP field (host name, vendor or user class, client
    id) is read."""
    used = {m for name in (GRUB, COMMISSION) for m in re.findall(r"\$\{?(\w+|\?)", files[name])}
    assert used == {"net_default_mac", "net_default_interface", "fleet_boot", "fleet_src",
                    "?"}, used
    assert '"$fleet_boot" =' in files[GRUB]  # quoted: its value is never split or run
    for name in (GRUB, COMMISSION):
        assert "hostname" not in files[name] and "vendor" not in files[name]
    other = render(parse(with_pool(SITE.replace("10.1.3.250", "10.1.3.240")),
                         "inventory.yaml"))
    assert other[COMMISSION] == files[COMMISSION]  # the pool is no input either
    assert not [k for k in files if k.startswith("pxe/tftp/") and "commission" in k
                and k != COMMISSION]


def test_grub_accepts_both_configs(files: dict[str, str], tmp_path: Path) -> None:
    check = shutil.which("grub-script-check")
    if check is None:
        pytest.fail("grub-script-check is missing: tools/install-host-deps.sh installs "
                    "grub-common")
    for name in (GRUB, COMMISSION):
        path = tmp_path / Path(name).name
        path.write_text(files[name])
        r = subprocess.run([check, str(path)], capture_output=True, text=True, check=False)
        assert r.returncode == 0, f"{name}: {r.stdout}{r.stderr}"
