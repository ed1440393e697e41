"""pxe/dnsmasq: the real `dnsmasq --test` accepts the config and every host line, and the
config means what it should (known MACs only on the provisioning network, firmware tags).

`dnsmasq --test` checks option syntax only: it does not read dhcp-hostsdir (and ignores
--dhcp-hostsfile), nor check that tftp-root exists. So the test config is the rendered one
with the pxe_root paths pointed at a temporary copy of the tree, plus every line of every
host file as a `dhcp-host=` option (a hosts-file line has exactly dhcp-host's syntax), and
the host lines are also parsed strictly here, because dnsmasq reads unknown fields as names.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

import pytest

from fleet.inventory.model import Inventory

CONF = "pxe/dnsmasq/dnsmasq.conf"
HOSTS = "pxe/dnsmasq/hosts/"
HOST_LINE = re.compile(
    r"^(?P<mac>[0-9a-f]{2}(?::[0-9a-f]{2}){5}),(?P<ip>\d+\.\d+\.\d+\.\d+),"
    r"(?P<name>[a-z][a-z0-9-]{0,62}),infinite$"
)
INSTALL_HINT = ("dnsmasq is not installed: `apt-get install dnsmasq-base` "
                "(tools/install-host-deps.sh, run by `make`, installs it; CI has it)")


def dnsmasq() -> str:
    exe = shutil.which("dnsmasq") or shutil.which("dnsmasq", path="/usr/sbin:/sbin")
    if exe is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    return exe


def host_lines(files: dict[str, str]) -> dict[str, list[str]]:
    """Host file name -> its non-comment lines."""
    return {
        path.removeprefix(HOSTS): [ln for ln in text.splitlines()
                                   if ln.strip() and not ln.startswith("#")]
        for path, text in files.items() if path.startswith(HOSTS)
    }


def checkable_config(inv: Inventory, files: dict[str, str], tmp: Path) -> Path:
    """Write pxe/dnsmasq and pxe/tftp under tmp and a config that --test can check fully."""
    pxe_root = inv.raw.site.pxe_root
    for rel, text in files.items():
        if rel.startswith("pxe/dnsmasq/"):
            dest = tmp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
    (tmp / "pxe" / "tftp").mkdir(parents=True, exist_ok=True)
    conf = files[CONF]
    paths = [p for p in re.findall(r"^[a-z-]+=(/\S*)", conf, flags=re.M)
             if not p.endswith("/") or p.startswith(pxe_root)]  # local=/domain/ is no path
    assert paths, "expected absolute paths (dhcp-hostsdir, tftp-root) in dnsmasq.conf"
    for p in paths:
        assert p.startswith(pxe_root + "/"), f"{p} is outside pxe_root {pxe_root}"
    local = conf.replace(pxe_root + "/", f"{tmp}/pxe/")
    assert pxe_root not in local
    extra = [f"dhcp-host={line}" for lines in host_lines(files).values() for line in lines]
    path = tmp / "dnsmasq-test.conf"
    path.write_text(local + "\n# host files, checked as dhcp-host options\n"
                    + "\n".join(extra) + "\n")
    return path


def run_test(conf: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([dnsmasq(), "--test", f"--conf-file={conf}"], capture_output=True,
                          text=True, timeout=30, check=False)


def test_dnsmasq_binary_present() -> None:
    """Fails (never skips) without dnsmasq: CI installs it, so a missing one is a setup bug."""
    r = subprocess.run([dnsmasq(), "--version"], capture_output=True, text=True, check=False)
    assert r.returncode == 0 and "Dnsmasq version" in r.stdout


def test_dnsmasq_accepts_config(rendered: tuple[Inventory, dict[str, str]],
                                tmp_path: Path) -> None:
    inv, files = rendered
    conf = checkable_config(inv, files, tmp_path)
    assert (tmp_path / "pxe" / "tftp").is_dir()
    assert any((tmp_path / "pxe" / "dnsmasq" / "hosts").iterdir())
    r = run_test(conf)
    assert r.returncode == 0, f"dnsmasq --test rejected the config:\n{r.stderr}{r.stdout}"
    assert "syntax check OK" in r.stderr + r.stdout


@pytest.mark.parametrize(("where", "broken"), [
    ("conf", "dhcp-range=set:prov,10.1.0.0,static,255.255.255.0,forever"),
    ("conf", "dhcp-boot-typo=undionly.kpxe"),
    ("conf", "dhcp-host=zz:zz:zz:zz:zz:zz,10.1.0.99"),
    ("host", "52:54:00:00:00:65,10.1.0.101,not_a_hostname!,infinite"),
])
def test_dnsmasq_rejects_broken_line(small_inv: Inventory, small_files: dict[str, str],
                                     tmp_path: Path, where: str, broken: str) -> None:
    """Negative control: the check above can fail, for the config and for host files."""
    files = dict(small_files)
    if where == "conf":
        files[CONF] += broken + "\n"
    else:
        files[HOSTS + "gpu-01"] += broken + "\n"
    r = run_test(checkable_config(small_inv, files, tmp_path))
    assert r.returncode != 0, f"dnsmasq --test accepted {broken!r}"
    assert "syntax check OK" not in r.stderr + r.stdout


def test_every_mac_has_one_host_entry(rendered: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = rendered
    by_file = host_lines(files)
    assert set(by_file) == set(inv.nodes), "one host file per inventory node"
    entries: dict[str, tuple[str, str, str]] = {}  # mac -> (ip, name, file)
    names: set[str] = set()
    ips: set[str] = set()
    for fname, lines in by_file.items():
        for line in lines:
            m = HOST_LINE.match(line)
            assert m, f"{HOSTS}{fname}: malformed dhcp-host line {line!r}"
            assert m["mac"] not in entries, f"{m['mac']} listed twice ({fname}, " \
                                            f"{entries[m['mac']][2]})"
            assert m["name"] not in names, f"host name {m['name']} listed twice"
            assert m["ip"] not in ips, f"address {m['ip']} listed twice"
            entries[m["mac"]] = (m["ip"], m["name"], fname)
            names.add(m["name"])
            ips.add(m["ip"])
    want: dict[str, tuple[str, str, str]] = {}
    for node in inv.nodes.values():
        want[node.mac] = (str(node.address), node.hostname, node.hostname)
        bmc = node.interfaces["bmc"]
        assert bmc.address is not None
        want[node.bmc_mac] = (str(bmc.address), f"{node.hostname}-bmc", node.hostname)
    assert entries == want


def test_host_addresses_are_served_by_a_range(rendered: tuple[Inventory,
                                                              dict[str, str]]) -> None:
    """dnsmasq hands out a dhcp-host address only on a subnet it has a dhcp-range for."""
    _inv, files = rendered
    nets = []
    for m in re.finditer(r"^dhcp-range=set:[\w-]+,([\d.]+),(?:[\d.]+|static),([\d.]+),",
                         files[CONF], flags=re.M):
        nets.append(IPv4Network(f"{m[1]}/{m[2]}", strict=False))
    for fname, lines in host_lines(files).items():
        for line in lines:
            ip = IPv4Address(line.split(",")[1])
            assert any(ip in n for n in nets), f"{fname}: {ip} is in no dhcp-range"


def test_unknown_macs_ignored_on_provisioning_network(
        rendered: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = rendered
    conf = files[CONF].splitlines()
    prov = [n for n, net in inv.raw.networks.items() if net.purpose == "provisioning"]
    assert prov
    for name in prov:
        assert f"dhcp-ignore=tag:{name},tag:!known" in conf
        ranges = [ln for ln in conf if ln.startswith(f"dhcp-range=set:{name},")]
        assert len(ranges) == 1 and ",static," in ranges[0], \
            f"the provisioning network {name} must have no dynamic pool: {ranges}"
    for name, net in inv.raw.networks.items():
        ranges = [ln for ln in conf if ln.startswith(f"dhcp-range=set:{name},")]
        if net.purpose == "ipoib":
            assert not ranges, f"no DHCP on the IPoIB network {name}"
        elif net.dhcp_pool is not None:
            assert ranges == [f"dhcp-range=set:{name},{net.dhcp_pool.start},"
                              f"{net.dhcp_pool.end},{net.cidr.netmask},1h"]


def test_firmware_tags_and_boot_files(rendered: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = rendered
    conf = set(files[CONF].splitlines())
    addr = inv.nodes[inv.raw.site.provisioning_host].address
    port = inv.raw.site.http_port
    http = f"http://{addr}" if port == 80 else f"http://{addr}:{port}"
    for line in (
        "dhcp-match=set:bios,option:client-arch,0",
        "dhcp-match=set:efi64,option:client-arch,7",
        "dhcp-match=set:efi64,option:client-arch,9",
        "dhcp-match=set:efi-http,option:client-arch,16",
        "dhcp-userclass=set:ipxe,iPXE",
        # the first stage only when not yet in iPXE, or iPXE would chainload itself
        "dhcp-boot=tag:bios,tag:!ipxe,undionly.kpxe",
        "dhcp-boot=tag:efi64,tag:!ipxe,bootx64.efi",
        f"dhcp-boot=tag:efi-http,tag:!ipxe,{http}/ipxe.efi",
        f"dhcp-boot=tag:ipxe,{http}/boot.ipxe",
        "enable-tftp",
        f"tftp-root={inv.raw.site.pxe_root}/tftp",
        f"dhcp-hostsdir={inv.raw.site.pxe_root}/dnsmasq/hosts",
        f"local=/{inv.raw.site.domain}/",
        f"addn-hosts={inv.raw.site.pxe_root}/dnsmasq/dns-hosts",
    ):
        assert line in conf, f"missing from dnsmasq.conf: {line}"
    prov_host = inv.nodes[inv.raw.site.provisioning_host]
    assert f"interface={prov_host.boot_nic}" in conf
    assert f"domain={inv.raw.site.domain}" in conf
