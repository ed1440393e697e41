"""The commissioning boot, rendered: with a pool on the provisioning network, a MAC the
inventory does not know gets a lease from it and iPXE's commissioning script (the real
`dnsmasq --test` accepts the config); without one, nothing of it is rendered and unknown
MACs are ignored as before."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from discover.sites import ROOT, SITE
from fleet.discover import boot
from fleet.inventory.load import parse
from fleet.render.pxe import render
from render.test_dnsmasq import CONF, checkable_config, run_test

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
    assert "tag:efi64,tag:!ipxe,tag:known,bootx64.efi" in boots
    assert "tag:efi64,tag:!ipxe,tag:!known,ipxe.efi" in boots
    assert not [b for b in boots if b.startswith(("tag:ipxe,http", "tag:efi64,tag:!ipxe,b"))]


def test_the_commissioning_script_reports_and_powers_off(files: dict[str, str]) -> None:
    script = files["pxe/http/commission.ipxe"]
    assert script.startswith("#!ipxe\n")
    assert ("kernel http://10.1.0.10/images/commission/vmlinuz initrd=initrd "
            "fleet.report=http://10.1.0.10:8470/v1/discover/${mac:hexhyp} "
            "fleet.boot_mac=${mac} ") in script
    assert "initrd --name initrd http://10.1.0.10/images/commission/initrd.img" in script
    assert script.rstrip().endswith("poweroff")
    for word in ("autoinstall", "sanboot", "state/", "user-data"):
        assert word not in script


def test_without_a_pool_nothing_changes() -> None:
    out = render(parse(SITE, "inventory.yaml"))
    assert "pxe/http/commission.ipxe" not in out
    assert out[CONF] == (ROOT / "pxe/dnsmasq/dnsmasq.conf").read_text()
    assert "dhcp-ignore=tag:prov,tag:!known" in out[CONF]
    assert boot.pool_network(parse(SITE, "inventory.yaml")) is None
