"""Render Ubuntu autoinstall (subiquity) NoCloud seeds: ``user-data`` and ``meta-data``.

The installer partitions only the boot disk (``storage.layout.match``), brings up the
provisioning NIC with its inventory address, and its late-commands install
salt-minion from the configured repository with the node's id and master.

With a site package repository (docs/repo.md) the installer's own apt has it too, pinned to
win, so that what curtin installs (the kernel first) is the version the site holds, not
the archive's newest. curtin takes a source's key only inline, and the render does not
hold the repository's key (the secrets store does): an early command fetches the key the
repository publishes and writes it into ``/autoinstall.yaml``, which subiquity reads again
after its early-commands. curtin trusts such a key for every source (it writes it into
``trusted.gpg.d``), so the late-commands remove its source and key once the node's own
files (the key for this repository only) are written.
"""

from __future__ import annotations

import shlex
from functools import lru_cache
from typing import Any

from fleet.inventory import aptcache
from fleet.inventory.model import Inventory, Node
from fleet.inventory.schema.site import Admin
from fleet.render import batch, bootstrap, installkey, yamlout
from fleet.render.header import header

# the live installer's curl (the late-commands run there, the target under /target)
CURL = "curl"

REQUIRED_KEYS = ("version", "storage", "network", "ssh", "late-commands", "user-data")

# the installer's source of the site repository, and curtin's files of it in the target
INSTALLER_SOURCE = "fleet-site-installer"
INSTALLER_FILES = (f"/etc/apt/sources.list.d/{INSTALLER_SOURCE}.list",
                   f"/etc/apt/trusted.gpg.d/{INSTALLER_SOURCE}.asc")
AUTOINSTALL_FILE = "/autoinstall.yaml"  # subiquity reads it again after the early-commands
KEY_DOWNLOAD = "/run/fleet-site.asc"
ARMOR = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
# the same line as grep's basic regex (a rendered file never holds the armor's text itself:
# tests/render/test_pillar.py takes that for key material)
ARMOR_BRE = "^-\\{5\\}BEGIN PGP PUBLIC KEY BLOCK-\\{5\\}$"
# sets apt.sources[NAME].key in the autoinstall file to the downloaded key (written anew,
# then renamed: a failure leaves the file as it was, and the install stops)
_INJECT = """import os, sys, yaml
path, name, key_file = sys.argv[1:4]
with open(path) as f:
    doc = yaml.safe_load(f)
ai = doc.get("autoinstall", doc)
with open(key_file) as f:
    ai["apt"]["sources"][name]["key"] = f.read()
with open(path + ".new", "w") as f:
    yaml.safe_dump(doc, f)
os.replace(path + ".new", path)
"""


# cached: the late-commands write the same lines (the bootstrap's files) on every node
_quote = lru_cache(maxsize=8192)(shlex.quote)


def _sh(*words: str) -> str:
    return " ".join(map(_quote, words))


def user_data(inv: Inventory, node: Node) -> dict[str, Any]:
    site = inv.raw.site
    keys = batch.once("autoinstall.keys", lambda: sorted({k for a in site.admins
                                                          for k in a.ssh_keys}))
    match = node.boot_disk.model_dump(exclude_none=True) if node.boot_disk else {"size": "largest"}
    ai: dict[str, Any] = {
        "version": 1,
        "locale": "en_US.UTF-8",
        "keyboard": {"layout": "us"},
        "timezone": site.timezone,
        "refresh-installer": {"update": False},
        **({"early-commands": [key_early_command(bootstrap.site_repo_key_url(inv))]}
           if site.apt.repo else {}),
        "apt": _apt(inv, node),
        "network": {"version": 2, "ethernets": {node.boot_nic: _ethernet(inv, node)}},
        # Only the boot disk: data disks (mkv volumes) are never touched by an install.
        "storage": {"layout": {"name": "lvm", "sizing-policy": "all", "match": match}},
        "ssh": {"install-server": True, "allow-pw": False, "authorized-keys": keys},
        "packages": ["curl", "ca-certificates"],
        "user-data": {
            "hostname": node.hostname,
            "fqdn": f"{node.hostname}.{site.domain}",
            "disable_root": True,
            "users": batch.once("autoinstall.users", lambda: [_user(a) for a in site.admins]),
        },
        "late-commands": _late_commands(inv, node),
        "shutdown": "reboot",
    }
    return {"autoinstall": ai}


def _ethernet(inv: Inventory, node: Node) -> dict[str, Any]:
    """The provisioning NIC, static, as the node keeps it."""
    site = inv.raw.site
    prov = node.prov
    eth: dict[str, Any] = {
        "match": {"macaddress": node.mac},
        "set-name": node.boot_nic,
        "mtu": prov.mtu,
        "addresses": [f"{prov.address}/{prov.cidr.prefixlen}"],
    }
    if prov.gateway is not None:
        eth["routes"] = [{"to": "default", "via": str(prov.gateway)}]
    if site.dns_servers:
        eth["nameservers"] = {"addresses": [str(a) for a in site.dns_servers],
                              "search": [site.domain]}
    return eth


def _apt(inv: Inventory, node: Node) -> dict[str, Any]:
    site = inv.raw.site
    apt = aptcache.node_apt(site, inv.nodes[site.provisioning_host], node)
    line = f"deb {bootstrap.site_repo_url(inv)} $RELEASE main"
    repo = ({"sources": {INSTALLER_SOURCE: {"source": line}},
             "preferences": [dict(bootstrap.SITE_REPO_PIN_FIELDS)]}
            if site.apt.repo else {})
    return {
        "preserve_sources_list": False,
        "geoip": False,
        "primary": [{"arches": ["default"], "uri": apt["mirror"]}],
        **({"security": [{"arches": ["default"], "uri": apt["security_mirror"]}]}
           if apt["security_mirror"] else {}),
        **repo,
    }


def key_early_command(key_url: str, *, config: str = AUTOINSTALL_FILE,
                      key_file: str = KEY_DOWNLOAD) -> str:
    """The early command that puts the site repository's published key into the installer's
    source of it; it fails (and so the install) on anything but an armored public key."""
    return " && ".join([
        _sh("curl", "-fsSL", "-o", key_file, key_url),
        _sh("grep", "-q", "-e", ARMOR_BRE, key_file),
        _sh("python3", "-c", _INJECT, config, INSTALLER_SOURCE, key_file)])


def _late_commands(inv: Inventory, node: Node) -> list[str]:
    """The salt-minion bootstrap's files, the node's key, salt-minion, then the callback."""
    before, after = batch.once("autoinstall.late-commands", lambda: _site_commands(inv))
    return [
        *before,
        *(_write(text, path) for path, text in bootstrap.node_files(inv, node).items()),
        *after,
        installkey.fetch_key(inv, node, CURL),
        "curtin in-target -- apt-get update",
        "curtin in-target -- env DEBIAN_FRONTEND=noninteractive apt-get install -y salt-minion",
        "curtin in-target -- systemctl enable salt-minion",
        installkey.callback(inv, node, CURL),  # last: the install is done
    ]


def _site_commands(inv: Inventory) -> tuple[list[str], list[str]]:
    """The late-commands before the node's own files (its site files among them) and those
    right after them: the same on every node."""
    site = inv.raw.site
    suite = bootstrap.UBUNTU_CODENAMES[site.os.release]
    repo_key = ([f"curtin in-target -- curl -fsSL -o {bootstrap.SITE_REPO_KEYRING} "
                 + shlex.quote(bootstrap.site_repo_key_url(inv))] if site.apt.repo else [])
    before = [
        f"curtin in-target -- install -d -m 0755 {' '.join(bootstrap.DIRS)}",
        f"curtin in-target -- curl -fsSL -o {bootstrap.KEYRING} "
        + shlex.quote(f"{bootstrap.http_base(inv)}/{site.salt.keyring}"),
        *repo_key,
        *(_write(text, path) for path, text in bootstrap.site_files(inv, suite).items()),
    ]
    after = [f"curtin in-target -- rm -f {' '.join(INSTALLER_FILES)}"] if site.apt.repo else []
    return before, after


def _write(text: str, path: str) -> str:
    """The late-command that writes ``text`` to ``path`` in the target."""
    return f"printf '%s\\n' {_sh(*text.splitlines())} > /target{path}"


def _user(admin: Admin) -> dict[str, Any]:
    user: dict[str, Any] = {"name": admin.name, "shell": "/bin/bash", "lock_passwd": True,
                            "ssh_authorized_keys": list(admin.ssh_keys)}
    if admin.sudo:
        user |= {"groups": ["sudo"], "sudo": "ALL=(ALL) NOPASSWD:ALL"}
    return user


# Sections that depend only on the site: emitted once per render through the memo.
SITE_WIDE = frozenset({"version", "locale", "keyboard", "timezone", "refresh-installer",
                       "early-commands", "apt", "ssh", "packages", "shutdown"})


def render_user_data(inv: Inventory, node: Node, memo: yamlout.Memo | None = None) -> str:
    """The NoCloud ``user-data``; one ``memo`` per render reuses the site-wide sections."""
    body = (memo or yamlout.Memo()).dump_mapping(
        "autoinstall", user_data(inv, node)["autoinstall"], SITE_WIDE, sort_keys=False)
    return "#cloud-config\n" + header("#") + body


def render_meta_data(inv: Inventory, node: Node) -> str:
    return header("#") + f"instance-id: fleet-{node.hostname}\nlocal-hostname: {node.hostname}\n"
