"""The salt-minion bootstrap, defined once: the files that make an installed node a minion.

Both installers' late-commands (``autoinstall.py``, ``preseed.py``) write these files, and
the base role's states (``base.apt``, ``base.minion``) keep them, with the contents the
pillar carries from here (``site:salt:bootstrap`` for the site-wide files, ``node:salt``
for the node's own), so that a highstate after an install finds the same bytes:

- ``salt.sources``: deb822 source of Salt's repository (``site.salt.repo``), signed by
  the keyring the installer fetches from the boot HTTP root (``site.salt.keyring``);
- ``salt.pref``: pins ``salt-*`` to ``site.salt.version``;
- ``minion.d/fleet.conf``: id, master (with a standby master the failover list and its
  keys), the reconnect sizing, ``master_finger`` (last,
  where the state appends the authenticated master's finger when the inventory records
  none);
- ``minion_id``;
- with a site package repository (``site.apt.repo``, docs/repo.md): ``fleet-site.sources``
  (the provisioning host's repository: over HTTP, or its own directory on that host),
  signed by ``fleet-site.asc`` (the installer fetches it from the repository, base.apt
  writes it from the pillar) and ``fleet-site.pref``, which makes the repository win.
"""

from __future__ import annotations

from typing import Any

from fleet.inventory.model import Inventory, Node
from fleet.inventory.schema.site import SaltSpec
from fleet.render import batch
from fleet.render.saltsize import site_sizing

KEYRING = "/etc/apt/keyrings/salt-archive-keyring.pgp"
SOURCES = "/etc/apt/sources.list.d/salt.sources"
PIN = "/etc/apt/preferences.d/salt.pref"
MINION_CONF = "/etc/salt/minion.d/fleet.conf"
MINION_ID = "/etc/salt/minion_id"
SITE_REPO_KEYRING = "/etc/apt/keyrings/fleet-site.asc"
SITE_REPO_SOURCES = "/etc/apt/sources.list.d/fleet-site.sources"
SITE_REPO_PIN = "/etc/apt/preferences.d/fleet-site.pref"
# the repository's URL path under the boot HTTP root, its key file and its release fields
# (fleet.repo.reprepro writes them)
SITE_REPO_HTTP = "/repo"
SITE_REPO_KEY_FILE = "fleet-site.asc"
SITE_REPO_ORIGIN, SITE_REPO_LABEL = "fleet", "fleet-site"
# the directories the files above need that a fresh install does not have
DIRS = ("/etc/apt/keyrings", "/etc/salt/minion.d")


def http_base(inv: Inventory) -> str:
    """The boot HTTP server's root on the provisioning host, as installers reach it (the
    keyring, the seeds and the install-token URLs are under it)."""
    return batch.once("bootstrap.http_base", lambda: _http_base(inv))


def _http_base(inv: Inventory) -> str:
    site = inv.raw.site
    addr = inv.nodes[site.provisioning_host].address
    return f"http://{addr}" if site.http_port == 80 else f"http://{addr}:{site.http_port}"


def _text(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def salt_sources(salt: SaltSpec, *, enabled: bool = True) -> str:
    """Salt's deb822 source; ``enabled=False`` (pillar ``base:lookup:apt:salt_repo:
    enabled``, the lab's minions come from a wheelhouse) keeps the file, switched off."""
    return _text(["Types: deb", f"URIs: {salt.repo}", "Suites: stable", "Components: main",
                  f"Signed-By: {KEYRING}", *([] if enabled else ["Enabled: no"])])


def site_repo_sources(inv: Inventory, suite: str, *, local: bool = False) -> str:
    """The site repository's deb822 source for the OS ``suite`` (its codename; base.apt's
    pillar carries ``{codename}``, filled from the node's grain): its URL under the boot
    HTTP root, or on the provisioning host itself (``local``) its directory, which that
    host's own apt reads before its web server is configured."""
    repo = inv.raw.site.apt.repo
    assert repo is not None
    uri = f"file:{repo}" if local else site_repo_url(inv)
    return _text(["Types: deb", f"URIs: {uri}", f"Suites: {suite}",
                  "Components: main", f"Signed-By: {SITE_REPO_KEYRING}"])


def site_repo_url(inv: Inventory) -> str:
    """The site repository as nodes and installers reach it: under the boot HTTP root."""
    return f"{http_base(inv)}{SITE_REPO_HTTP}"


def site_repo_key_url(inv: Inventory) -> str:
    return f"{site_repo_url(inv)}/{SITE_REPO_KEY_FILE}"


# Every package of the site repository wins over the archive's, even a newer one: the
# repository holds exactly what the site pins and holds.
SITE_REPO_PIN_FIELDS = {"package": "*",
                        "pin": f"release o={SITE_REPO_ORIGIN},l={SITE_REPO_LABEL}",
                        "pin-priority": 1001}


def site_repo_pin() -> str:
    f = SITE_REPO_PIN_FIELDS
    return _text([f"Package: {f['package']}", f"Pin: {f['pin']}",
                  f"Pin-Priority: {f['pin-priority']}"])


# site.os.release -> its codename (the autoinstall's suite)
UBUNTU_CODENAMES = {"24.04": "noble", "22.04": "jammy"}


def salt_pin(salt: SaltSpec) -> str:
    return _text(["Package: salt-*", f"Pin: version {salt.version}*", "Pin-Priority: 1001"])


def finger_line(finger: str) -> str:
    return f"master_finger: '{finger}'\n"


def minion_conf(inv: Inventory, node: Node) -> str:
    """``minion.d/fleet.conf``. The id and master are plain host names or addresses (the
    schema's types), the fingerprint is quoted. The reconnect keys are sized from the
    site's capacity (not its node count: adding a node changes no other node's file) so
    that a fleet-wide reconnect does not arrive all at once."""
    return (f"{_MINION_CONF_HEAD}\nid: {node.hostname}\n"
            + batch.once("bootstrap.minion_conf", lambda: _minion_conf_site(inv)))


_MINION_CONF_HEAD = ("# Managed by fleet: written by the installer, then kept by Salt "
                    "(base.minion). Do not edit.")


def _minion_conf_site(inv: Inventory) -> str:
    """The lines of ``minion.d/fleet.conf`` after the id: the same on every node."""
    salt = inv.raw.site.salt
    sizing = site_sizing(inv)["minion"]
    lines = [
        *master_lines(inv),
        "# a fleet-wide reconnect must not arrive all at once: sized from the site's switch",
        "# ports, not its node count (pillar site:salt:sizing:minion; docs/salt.md, Sizing)",
        *(f"{key}: {str(sizing[key]).lower()}" for key in (  # ints and one bool
            "random_reauth_delay", "auth_timeout", "recon_default", "recon_max",
            "recon_randomize", "acceptance_wait_time", "acceptance_wait_time_max")),
    ]
    text = _text(lines)
    return text + finger_line(salt.master_finger) if salt.master_finger else text


# failover mode (docs/salt.md, A standby master): the minion stays with the master it
# moved to (no failback: the old master coming back takes no node back), tries the list
# for ever, and never waits on DNS (Salt itself forces retry_dns to 0 in this mode, with a
# critical log line each start)
FAILOVER = ("master_type: failover", "master_failback: false", "master_tries: -1",
            "retry_dns: 0")


def master_lines(inv: Inventory) -> list[str]:
    """``master: ADDRESS``, or with a standby master the failover list (the active master
    first) and its keys."""
    standby = inv.raw.site.salt.standby
    if standby is None or inv.standby_address is None:
        return [f"master: {inv.master_address}"]
    return ["# two masters with one key, one at a time: the first that answers",
            "master:", f"  - {inv.master_address}", f"  - {inv.standby_address}",
            *FAILOVER, f"master_alive_interval: {standby.alive_interval_s}"]


def minion_id(node: Node) -> str:
    return f"{node.hostname}\n"


def files(inv: Inventory, node: Node, suite: str) -> dict[str, str]:
    """path -> contents of every file the installer of OS ``suite`` writes, in order."""
    return {**site_files(inv, suite), **node_files(inv, node)}


def site_files(inv: Inventory, suite: str) -> dict[str, str]:
    """The first of :func:`files`: the same on every node of OS ``suite``."""
    salt = inv.raw.site.salt
    repo = ({SITE_REPO_SOURCES: site_repo_sources(inv, suite), SITE_REPO_PIN: site_repo_pin()}
            if inv.raw.site.apt.repo else {})
    return {**repo, SOURCES: salt_sources(salt), PIN: salt_pin(salt)}


def node_files(inv: Inventory, node: Node) -> dict[str, str]:
    """The rest of :func:`files`: the node's own."""
    return {MINION_CONF: minion_conf(inv, node), MINION_ID: minion_id(node)}


def site_pillar(inv: Inventory) -> dict[str, Any]:
    """``site:salt:bootstrap``: the site-wide files, for base.apt."""
    salt = inv.raw.site.salt
    return {
        "keyring": KEYRING,
        "sources": {"path": SOURCES, "contents": salt_sources(salt),
                    "disabled": salt_sources(salt, enabled=False)},
        "pin": {"path": PIN, "contents": salt_pin(salt)},
        "site_repo": _site_repo(inv),
    }


def _site_repo(inv: Inventory) -> dict[str, Any] | None:
    """``site:salt:bootstrap:site_repo`` (base.apt, provisioning.pxe), None without one."""
    repo = inv.raw.site.apt.repo
    if repo is None:
        return None
    return {"dir": repo, "http_path": SITE_REPO_HTTP, "keyring": SITE_REPO_KEYRING,
            "sources": {"path": SITE_REPO_SOURCES,
                        "contents": site_repo_sources(inv, "{codename}"),
                        "local": site_repo_sources(inv, "{codename}", local=True)},
            "pin": {"path": SITE_REPO_PIN, "contents": site_repo_pin()}}


def node_pillar(inv: Inventory, node: Node) -> dict[str, Any]:
    """``node:salt``: the node's own files, for base.minion."""
    return {"minion_conf": {"path": MINION_CONF, "contents": minion_conf(inv, node)},
            "minion_id": {"path": MINION_ID, "contents": minion_id(node)}}
