"""The apt mirrors a node installs from and the ones base.apt keeps are the same, and the
provisioning host is the one node that fetches from the upstreams (its own apt-cacher-ng
is not there while it is installed, nor before its first highstate)."""

from __future__ import annotations

from typing import Any

import yaml

from fleet.inventory import aptcache
from fleet.inventory.load import load_inventory
from support import harness

INV = load_inventory(harness.ROOT / "inventory.yaml")


def _sources_uris(text: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in text.splitlines()
            if line.startswith("URIs:")]


def test_installer_and_state_use_the_same_mirrors(rendered: dict[str, Any]) -> None:
    inv = INV
    site = inv.raw.site
    prov = inv.nodes[site.provisioning_host]
    through = [n for n in inv.nodes.values() if n.hostname != prov.hostname]
    assert through, "the inventory must have nodes besides the provisioning host"
    for node in [prov, *through[:5]]:
        want = aptcache.node_apt(site, prov, node)
        result = rendered["results"][(node.hostname, "ubuntu-24.04")]
        _, text = result.managed("base-apt-file-managed-sources")
        assert _sources_uris(text) == [want["mirror"], want["security_mirror"]]
        user_data = harness.ROOT / "pxe" / "http" / "hosts" / node.hostname / "user-data"
        ai = yaml.safe_load(user_data.read_text())["autoinstall"]
        assert ai["apt"]["primary"][0]["uri"] == want["mirror"]
        assert ai["apt"]["security"][0]["uri"] == want["security_mirror"]


def test_only_the_provisioning_host_bypasses_its_cache() -> None:
    inv = INV
    site = inv.raw.site
    prov = inv.nodes[site.provisioning_host]
    assert site.apt.mirror.startswith(f"http://{prov.address}:")  # the site's cache URL
    assert aptcache.node_apt(site, prov, prov) == {
        "mirror": "http://archive.ubuntu.com/ubuntu",
        "security_mirror": "http://security.ubuntu.com/ubuntu"}
    other = next(n for n in inv.nodes.values() if n.hostname != prov.hostname)
    assert aptcache.node_apt(site, prov, other) == {
        "mirror": site.apt.mirror, "security_mirror": site.apt.security_mirror}
