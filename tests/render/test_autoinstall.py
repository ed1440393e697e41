"""pxe/http/hosts/<id>/: the autoinstall seed (user-data, meta-data) and the boot scripts,
for every node of both inventories; and the generated-file header on every rendered file."""

from __future__ import annotations

import functools
import re
import shlex
import shutil
import subprocess
import threading
from collections.abc import Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet.inventory import aptcache
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory, Node
from fleet.problems import InventoryError
from fleet.render import bootstrap
from fleet.render.autoinstall import (
    ARMOR,
    INSTALLER_FILES,
    INSTALLER_SOURCE,
    REQUIRED_KEYS,
    key_early_command,
    render_user_data,
)
from fleet.render.header import TEXT
from render.helpers import IPXE_ON_FAIL, ipxe_kernel_line, load_yaml

# Top-level keys subiquity knows (its autoinstall schema); anything else is a typo.
SUBIQUITY_KEYS = {
    "version", "interactive-sections", "early-commands", "locale", "refresh-installer",
    "keyboard", "source", "network", "proxy", "apt", "storage", "identity",
    "active-directory", "ubuntu-pro", "ssh", "codecs", "drivers", "oem", "snaps",
    "debconf-selections", "packages", "kernel", "kernel-crash-dumps", "timezone", "updates",
    "shutdown", "late-commands", "error-commands", "reporting", "user-data", "zdevs",
}
# curtin's disk match keys (what storage.layout.match may say)
MATCH_KEYS = {"serial", "model", "vendor", "path", "id_path", "devpath", "ssd", "size",
              "install-media"}


def seeds(inv: Inventory, files: dict[str, str]) -> list[tuple[Node, str, str]]:
    out = []
    for node in inv.nodes.values():
        base = f"pxe/http/hosts/{node.hostname}/"
        out.append((node, files[base + "user-data"], files[base + "meta-data"]))
    return out


def autoinstall(text: str) -> dict[str, Any]:
    doc = load_yaml(text)
    assert isinstance(doc, dict) and set(doc) == {"autoinstall"}, "one top-level key"
    ai = doc["autoinstall"]
    assert isinstance(ai, dict)
    return ai


def test_every_node_has_a_seed(rendered: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = rendered
    hosts = {p.split("/")[3] for p in files if p.startswith("pxe/http/hosts/")}
    assert hosts == set(inv.nodes)
    for h in hosts:
        have = {p.rsplit("/", 1)[1] for p in files if p.startswith(f"pxe/http/hosts/{h}/")}
        assert have == {"user-data", "meta-data", "install.ipxe", "local.ipxe", "grub-install.cfg",
                        "grub-local.cfg"}, h


def test_user_data_is_valid_autoinstall(rendered: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = rendered
    for node, user_data, _meta in seeds(inv, files):
        h = node.hostname
        assert user_data.startswith("#cloud-config\n"), f"{h}: NoCloud needs #cloud-config first"
        ai = autoinstall(user_data)
        assert ai["version"] == 1, h
        missing = [k for k in REQUIRED_KEYS if k not in ai]
        assert not missing, f"{h}: missing {missing}"
        assert set(ai) <= SUBIQUITY_KEYS, f"{h}: unknown keys {set(ai) - SUBIQUITY_KEYS}"
        assert ai.get("shutdown", "reboot") in ("reboot", "poweroff")
        assert isinstance(ai["late-commands"], list)
        assert all(isinstance(c, str) for c in ai["late-commands"])
        assert isinstance(ai["keyboard"]["layout"], str)
        assert ai["ssh"]["install-server"] is True and ai["ssh"]["allow-pw"] is False
        assert ai["ssh"]["authorized-keys"], f"{h}: no SSH keys: nobody could log in"
        # no identity section: the user-data section must create the users instead
        assert "identity" in ai or ai["user-data"].get("users"), h
        ud = ai["user-data"]
        assert ud["hostname"] == h
        assert ud["fqdn"] == f"{h}.{inv.raw.site.domain}"
        for user in ud["users"]:
            assert user["lock_passwd"] is True and "passwd" not in user
            assert user["ssh_authorized_keys"]
        apt = ai["apt"]
        # the inventory's mirrors; the provisioning host's own: their upstreams
        mirrors = aptcache.node_apt(inv.raw.site, inv.nodes[inv.raw.site.provisioning_host],
                                    node)
        assert apt["primary"] == [{"arches": ["default"], "uri": mirrors["mirror"]}]
        assert isinstance(apt["preserve_sources_list"], bool)


def boot_disk_selected(node: Node, match: dict[str, Any]) -> bool:
    """Whether ``match`` can only pick the profile's boot disk."""
    disks = node.profile.disks
    boot = next(d for d in disks if d.role == "boot")
    others = [d for d in disks if d.role != "boot"]
    if set(match) & {"serial", "path", "id_path", "devpath"}:
        return True  # names one device
    if match.get("size") == "largest":
        return all(boot.size_gb > d.size_gb for d in others)
    if match.get("size") == "smallest":
        return all(boot.size_gb < d.size_gb for d in others)
    return not others


def test_storage_is_the_boot_disk_only(rendered: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = rendered
    for node, user_data, _meta in seeds(inv, files):
        storage = autoinstall(user_data)["storage"]
        # a layout, never an explicit config that could list data disks
        assert set(storage) == {"layout"}, node.hostname
        layout = storage["layout"]
        assert layout["name"] in ("lvm", "direct")
        if "sizing-policy" in layout:
            assert layout["sizing-policy"] in ("scaled", "all")
        match = layout["match"]
        assert match and set(match) <= MATCH_KEYS, node.hostname
        want = node.boot_disk.model_dump(exclude_none=True) if node.boot_disk else None
        if want is not None:
            assert match == want, node.hostname
        assert boot_disk_selected(node, match), \
            f"{node.hostname}: storage match {match} may pick a data disk"


def test_boot_disk_fallback_never_picks_a_data_disk(
        small_text: str, inventory_file: Callable[..., Path]) -> None:
    """A profile whose boot disk has no `match` falls back to `size: largest`, which on a
    storage node (boot 480 GB, data 7.68 TB) is a data disk: the install would wipe it.
    Either validation must reject such a profile or the fallback must be safe."""
    text = small_text.replace(
        "{role: boot, kind: sata-ssd, size_gb: 480, match: {size: smallest}}",
        "{role: boot, kind: sata-ssd, size_gb: 480}")
    assert text != small_text
    try:
        inv = load_inventory(inventory_file(text))
    except InventoryError:
        return  # rejected by validation: fine
    node = inv.nodes["stor-1"]
    match = autoinstall(render_user_data(inv, node))["storage"]["layout"]["match"]
    assert boot_disk_selected(node, match), f"stor-1 would install onto {match}"


def test_network_is_the_boot_nic(rendered: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = rendered
    site = inv.raw.site
    for node, user_data, _meta in seeds(inv, files):
        net = autoinstall(user_data)["network"]
        assert net["version"] == 2
        assert set(net) == {"version", "ethernets"}
        assert list(net["ethernets"]) == [node.boot_nic]
        eth = net["ethernets"][node.boot_nic]
        prov = node.prov
        assert eth["match"] == {"macaddress": node.mac}
        assert eth["set-name"] == node.boot_nic
        assert eth["addresses"] == [f"{prov.address}/{prov.cidr.prefixlen}"]
        assert eth["mtu"] == prov.mtu
        if prov.gateway is not None:
            assert eth["routes"] == [{"to": "default", "via": str(prov.gateway)}]
        if site.dns_servers:
            assert eth["nameservers"]["addresses"] == [str(a) for a in site.dns_servers]


def test_late_commands_write_minion_id_and_master(
        rendered: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = rendered
    master = inv.nodes[inv.raw.site.salt.master]
    for node, user_data, _meta in seeds(inv, files):
        h = node.hostname
        written: dict[str, list[str]] = {}
        for cmd in autoinstall(user_data)["late-commands"]:
            words = shlex.split(cmd)  # each must be one valid shell command line
            if words[0] == "printf" and ">" in words:
                i = words.index(">")
                assert words[1] == "%s\\n" and i == len(words) - 2, cmd
                written[words[-1]] = words[2:i]
            elif words[0] == "curtin":
                assert words[1:3] == ["in-target", "--"], cmd
            elif words[:2] == ["sh", "-c"] and len(words) == 3:
                pass  # the reinstall key fetch and callback: tests/render/test_installkey.py
            else:
                pytest.fail(f"{h}: unexpected late-command {cmd!r}")
        assert written["/target/etc/salt/minion_id"] == [h]
        conf = written["/target/etc/salt/minion.d/fleet.conf"]
        assert f"id: {h}" in conf
        # the active master first (with a standby master, a failover list: docs/salt.md)
        listed = yaml.safe_load("\n".join(conf))["master"]
        assert (listed if isinstance(listed, list) else [listed])[0] == str(master.address)
        assert all(path.startswith("/target/") for path in written), written
        cmds = autoinstall(user_data)["late-commands"]
        assert any("apt-get install -y salt-minion" in c for c in cmds)
        assert any("systemctl enable salt-minion" in c for c in cmds)


def test_meta_data(rendered: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = rendered
    ids = set()
    for node, _user_data, meta in seeds(inv, files):
        doc = load_yaml(meta)
        assert doc == {"instance-id": f"fleet-{node.hostname}",
                       "local-hostname": node.hostname}
        ids.add(doc["instance-id"])
    assert len(ids) == len(inv.nodes)


def test_ipxe_scripts(rendered: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = rendered
    scripts = {p: t for p, t in files.items() if p.endswith(".ipxe")}
    assert "pxe/http/boot.ipxe" in scripts
    assert len(scripts) == 1 + 2 * len(inv.nodes)
    for path, text in scripts.items():
        assert text.startswith("#!ipxe\n"), path
    for node in inv.nodes.values():
        text = files[f"pxe/http/hosts/{node.hostname}/install.ipxe"]
        assert sum(ln.startswith("kernel ") for ln in text.splitlines()) == 1
        kernel = [ipxe_kernel_line(text)]
        args = kernel[0].split()
        # iPXE splits on whitespace only and passes quotes through to the kernel: no quotes
        assert "'" not in kernel[0] and '"' not in kernel[0], kernel[0]
        seed = [a for a in args if a.startswith("ds=")]
        assert seed == [f"ds=nocloud-net;s=http://{_http(inv)}/hosts/{node.hostname}/"]
        assert f"BOOTIF=01-{node.mac.replace(':', '-')}" in args
        assert "autoinstall" in args and "initrd=initrd" in args
        assert f"boot{IPXE_ON_FAIL}" in text.splitlines()


def test_installer_loads_fail_back_to_pxe(rendered: tuple[Inventory, dict[str, str]]) -> None:
    """A failed kernel or initrd download never boots what did load, nor falls through to
    boot.ipxe's local-disk fallback (the old system): it reboots, back to PXE."""
    inv, files = rendered
    for node in inv.nodes.values():
        base = f"pxe/http/hosts/{node.hostname}/"
        ipxe = files[base + "install.ipxe"].splitlines()
        loads = [ln for ln in ipxe if ln.startswith(("kernel ", "initrd ", "boot"))]
        assert [ln.split()[0] for ln in loads] == ["kernel", "initrd", "boot"]
        assert all(ln.endswith(IPXE_ON_FAIL) for ln in loads), loads
        assert ipxe[ipxe.index(":failed"):][-1] == "reboot"
        grub = [ln.strip() for ln in files[base + "grub-install.cfg"].splitlines()]
        i_linux = next(i for i, ln in enumerate(grub) if ln.startswith("linux "))
        assert grub[i_linux + 1] == 'if [ "$?" = 0 ]; then'
        assert grub[i_linux + 2].startswith("initrd ")
        assert grub[i_linux + 3:i_linux + 5] == ['if [ "$?" = 0 ]; then', "boot"]
        assert grub.count("boot") == 1
        assert grub[i_linux + 5:][-3:] == ["sleep 10", "reboot", "}"]


def test_grub_configs(rendered: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = rendered
    for node in inv.nodes.values():
        text = files[f"pxe/http/hosts/{node.hostname}/grub-install.cfg"]
        linux = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("linux ")]
        assert len(linux) == 1
        # GRUB would end the command at the ';' unless the argument is quoted
        seed = f"'ds=nocloud-net;s=http://{_http(inv)}/hosts/{node.hostname}/'"
        assert f" {seed} " in linux[0], linux[0]
        assert linux[0].count(";") == 1
        assert f"BOOTIF=01-{node.mac.replace(':', '-')}" in linux[0].split()
        assert text.count("{") == text.count("}")
        local = files[f"pxe/http/hosts/{node.hostname}/grub-local.cfg"]
        assert local.count("{") == local.count("}")
        assert f"/EFI/{inv.raw.site.os.distro}/shimx64.efi" in local


def _http(inv: Inventory) -> str:
    addr = inv.nodes[inv.raw.site.provisioning_host].address
    port = inv.raw.site.http_port
    return f"{addr}" if port == 80 else f"{addr}:{port}"


HEADER_LINE = re.compile(r"^# " + re.escape(TEXT) + "$", re.M)
# the pictures: an XML / Markdown comment (after the SVG's XML declaration at most)
COMMENT_LINE = re.compile(r"^<!-- " + re.escape(TEXT) + " -->$", re.M)


def test_every_file_carries_the_header(rendered: tuple[Inventory, dict[str, str]]) -> None:
    _inv, files = rendered
    for path, text in files.items():
        head = "\n".join(text.splitlines()[:2])  # after #!ipxe / #cloud-config at most
        line = COMMENT_LINE if path.startswith("pictures/") else HEADER_LINE
        assert line.search(head), f"{path}: no generated-file header in its first lines"


def test_ubuntu_cmdline_documented_format(rendered: tuple[Inventory, dict[str, str]]) -> None:
    """The Ubuntu live-server line (docs: netboot the server installer; subiquity's
    zero-touch autoinstall; cloud-init NoCloud): GRUB's word splitting of the quoted
    line gives exactly iPXE's arguments."""
    inv, files = rendered
    iso = inv.raw.site.install.iso_url
    for node in inv.nodes.values():
        base = f"pxe/http/hosts/{node.hostname}/"
        ipxe = ipxe_kernel_line(files[base + "install.ipxe"])
        args = ipxe.split()[2:]  # after `kernel URL`
        assert args.count("autoinstall") == 1  # bare: no "Continue with autoinstall?"
        # casper downloads the ISO named by url=; cloud-init must not take it as config
        assert f"url={iso}" in args and args.count("cloud-config-url=/dev/null") == 1
        seed = next(a for a in args if a.startswith("ds="))
        assert seed.endswith(f"/hosts/{node.hostname}/")  # NoCloud needs the trailing /
        grub = next(ln.strip() for ln in files[base + "grub-install.cfg"].splitlines()
                    if ln.strip().startswith("linux "))
        assert shlex.split(grub)[2:] == [a for a in args if a != "initrd=initrd"]


def test_the_installer_installs_from_the_site_repository_pinned(
        rendered: tuple[Inventory, dict[str, str]]) -> None:
    """With a site repository, curtin's own apt has it, pinned as the nodes pin it, so the
    kernel it installs is the site's; the key comes from the repository (an early command);
    the late-commands drop curtin's copies (its key trusted for every source) before the
    node's own files take over. Without one, none of it."""
    inv, files = rendered
    for node, user_data, _meta in seeds(inv, files):
        ai = autoinstall(user_data)
        if inv.raw.site.apt.repo is None:
            assert "early-commands" not in ai and "sources" not in ai["apt"]
            assert not any(INSTALLER_SOURCE in c for c in ai["late-commands"])
            continue
        url = bootstrap.site_repo_url(inv)
        assert ai["apt"]["sources"] == {
            INSTALLER_SOURCE: {"source": f"deb {url} $RELEASE main"}}
        (pref,) = ai["apt"]["preferences"]
        # the very pin the node's fleet-site.pref has (one definition, two forms)
        assert (f"Package: {pref['package']}\nPin: {pref['pin']}\n"
                f"Pin-Priority: {pref['pin-priority']}\n") == bootstrap.site_repo_pin()
        assert ai["early-commands"] == [key_early_command(bootstrap.site_repo_key_url(inv))]
        cmds = ai["late-commands"]
        drop = next(i for i, c in enumerate(cmds) if INSTALLER_SOURCE in c)
        assert shlex.split(cmds[drop])[-2:] == list(INSTALLER_FILES)
        assert drop < cmds.index("curtin in-target -- apt-get update"), node.hostname


def _serve(directory: Path) -> tuple[ThreadingHTTPServer, str]:
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


KEY = f"{ARMOR}\n\nmDMEZ0fake0key0body0for0the0test\n-----END PGP PUBLIC KEY BLOCK-----\n"


@pytest.mark.parametrize("served, ok", [(KEY, True),
                                        ("<html>404 from a captive portal</html>\n", False)])
def test_the_key_early_command_writes_the_served_key_into_the_installer_config(
        tmp_path: Path, served: str, ok: bool) -> None:
    """The early command itself, run by sh as subiquity runs it, against a key served on
    loopback: an armored public key lands in the source's ``key``, the rest of the config
    as it was; anything else fails the command (and so the install) and changes nothing."""
    if shutil.which("curl") is None:
        pytest.fail("curl is not installed: the early command fetches the key with it")
    www = tmp_path / "www"
    www.mkdir()
    (www / "fleet-site.asc").write_text(served)
    config = tmp_path / "autoinstall.yaml"
    original = {"autoinstall": {"version": 1, "apt": {"sources": {
        INSTALLER_SOURCE: {"source": "deb http://x/repo $RELEASE main"}}}}}
    config.write_text(yaml.safe_dump(original))
    server, base = _serve(www)
    try:
        cmd = key_early_command(f"{base}/fleet-site.asc", config=str(config),
                                key_file=str(tmp_path / "key.asc"))
        proc = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=60,
                              check=False)
    finally:
        server.shutdown()
    doc = yaml.safe_load(config.read_text())
    if not ok:
        assert proc.returncode != 0 and doc == original
        return
    assert proc.returncode == 0, proc.stderr
    src = doc["autoinstall"]["apt"]["sources"][INSTALLER_SOURCE]
    assert src == {"source": "deb http://x/repo $RELEASE main", "key": KEY}
    doc["autoinstall"]["apt"]["sources"][INSTALLER_SOURCE].pop("key")
    assert doc == original
