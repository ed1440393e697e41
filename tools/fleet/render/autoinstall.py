"""Render Ubuntu autoinstall (subiquity) NoCloud seeds: ``user-data`` and ``meta-data``.

The installer partitions only the boot disk (``storage.layout.match``), brings up the
provisioning NIC with its inventory address, and its late-commands install
salt-minion from the configured repository with the node's id and master.
"""

from __future__ import annotations

import shlex
from typing import Any

from fleet.inventory import aptcache
from fleet.inventory.model import Inventory, Node
from fleet.inventory.schema.site import Admin
from fleet.render import bootstrap, installkey, yamlout
from fleet.render.header import header

# the live installer's curl (the late-commands run there, the target under /target)
CURL = "curl"

REQUIRED_KEYS = ("version", "storage", "network", "ssh", "late-commands", "user-data")


def _sh(*words: str) -> str:
    return " ".join(shlex.quote(w) for w in words)


def user_data(inv: Inventory, node: Node) -> dict[str, Any]:
    site = inv.raw.site
    keys = sorted({k for a in site.admins for k in a.ssh_keys})
    match = node.boot_disk.model_dump(exclude_none=True) if node.boot_disk else {"size": "largest"}
    ai: dict[str, Any] = {
        "version": 1,
        "locale": "en_US.UTF-8",
        "keyboard": {"layout": "us"},
        "timezone": site.timezone,
        "refresh-installer": {"update": False},
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
            "users": [_user(a) for a in site.admins],
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
    return {
        "preserve_sources_list": False,
        "geoip": False,
        "primary": [{"arches": ["default"], "uri": apt["mirror"]}],
        **({"security": [{"arches": ["default"], "uri": apt["security_mirror"]}]}
           if apt["security_mirror"] else {}),
    }


def _late_commands(inv: Inventory, node: Node) -> list[str]:
    """The salt-minion bootstrap's files, the node's key, salt-minion, then the callback."""
    def write(text: str, path: str) -> str:
        return f"printf '%s\\n' {_sh(*text.splitlines())} > /target{path}"

    site = inv.raw.site
    suite = bootstrap.UBUNTU_CODENAMES[site.os.release]
    repo_key = ([f"curtin in-target -- curl -fsSL -o {bootstrap.SITE_REPO_KEYRING} "
                 + shlex.quote(bootstrap.site_repo_key_url(inv))] if site.apt.repo else [])
    return [
        f"curtin in-target -- install -d -m 0755 {' '.join(bootstrap.DIRS)}",
        f"curtin in-target -- curl -fsSL -o {bootstrap.KEYRING} "
        + shlex.quote(f"{bootstrap.http_base(inv)}/{site.salt.keyring}"),
        *repo_key,
        *(write(text, path) for path, text in bootstrap.files(inv, node, suite).items()),
        installkey.fetch_key(inv, node, CURL),
        "curtin in-target -- apt-get update",
        "curtin in-target -- env DEBIAN_FRONTEND=noninteractive apt-get install -y salt-minion",
        "curtin in-target -- systemctl enable salt-minion",
        installkey.callback(inv, node, CURL),  # last: the install is done
    ]


def _user(admin: Admin) -> dict[str, Any]:
    user: dict[str, Any] = {"name": admin.name, "shell": "/bin/bash", "lock_passwd": True,
                            "ssh_authorized_keys": list(admin.ssh_keys)}
    if admin.sudo:
        user |= {"groups": ["sudo"], "sudo": "ALL=(ALL) NOPASSWD:ALL"}
    return user


# Sections that depend only on the site: emitted once per render through the memo.
SITE_WIDE = frozenset({"version", "locale", "keyboard", "timezone", "refresh-installer",
                       "apt", "ssh", "packages", "shutdown"})


def render_user_data(inv: Inventory, node: Node, memo: yamlout.Memo | None = None) -> str:
    """The NoCloud ``user-data``; one ``memo`` per render reuses the site-wide sections."""
    body = (memo or yamlout.Memo()).dump_mapping(
        "autoinstall", user_data(inv, node)["autoinstall"], SITE_WIDE, sort_keys=False)
    return "#cloud-config\n" + header("#") + body


def render_meta_data(inv: Inventory, node: Node) -> str:
    return header("#") + f"instance-id: fleet-{node.hostname}\nlocal-hostname: {node.hostname}\n"
