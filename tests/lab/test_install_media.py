"""The provisioning role's server side of an install on the lab's head node: the installer
ISO with its kernel and initrd (salt/provisioning/media.sls) and the apt cache
(salt/provisioning/aptcache.sls).

The lab has no live-server ISO (2.6 GB from outside; lab/pillar/lab.sls sets
provisioning:lookup:media:enabled false, so the highstate renders none of it). This test
builds a **stand-in ISO** on the head node with xorriso: the live-server layout
(casper/vmlinuz, casper/initrd) holding random bytes, not Ubuntu's files. It serves it on
the head node's loopback over HTTP (a transient python3 http.server unit) and applies
``provisioning.media`` with the pillar override

    provisioning:lookup:media:enabled: true
    provisioning:install:iso_source: http://127.0.0.1:<port>/standin-live-server.iso
    provisioning:install:iso_sha256: <the stand-in's sha256>

so the ISO, kernel and initrd land at the paths of the rendered pillar
(provisioning:media), served at the real URLs. Another lab node then fetches the kernel,
the initrd and the ISO from the head node at exactly the URLs the rendered iPXE and GRUB
configs and the kernel command line (``url=``) name, read from the lab's render, over
HTTP (and GRUB's paths over TFTP too: tftp/images links to the images directory). A
second apply changes nothing; a wrong sha256 fails the ISO's state naming both sums and
leaves the served files as they were. The stand-in's files are removed afterwards.

The apt cache needs no override: the highstate installs it. Another node fetches the
Release file of the lab's apt mirror through it, at the cache's port on the head node's
provisioning address, and an upstream the inventory does not name is refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from labtools import Lab, node_ids, podman_exec

HEAD = node_ids("provisioning")[0]
CLIENT = next(n for n in node_ids() if n != HEAD)
WORK = "/var/tmp/fleet-standin-media"           # on the head node
STANDIN = "standin-live-server.iso"
HTTP_UNIT = "fleet-standin-media-http"
HTTP_PORT = 18431                                # the stand-in source, head's loopback
ISO_STATE = "provisioning-media-file-managed-iso"
UNPACK_STATE = "provisioning-media-cmd-run-unpack"


def head_sh(lab: Lab, script: str, timeout: float = 120) -> str:
    out = podman_exec(lab, HEAD, "sh", "-c", script, timeout=timeout)
    assert out.returncode == 0, f"{HEAD}: {script}: {out.stderr}"
    return out.stdout


def fetch_sha256(lab: Lab, url: str) -> str:
    """sha256 of what CLIENT gets at ``url`` (http:// or tftp://)."""
    out = podman_exec(lab, CLIENT, "sh", "-c",
                      f"curl -sS -f --max-time 120 '{url}' | sha256sum", timeout=180)
    assert out.returncode == 0, f"{CLIENT}: GET {url}: {out.stderr}"
    return out.stdout.split()[0]


def apply_media(lab: Lab, sha: str) -> dict[str, Any]:
    pillar = {"provisioning": {"lookup": {"media": {"enabled": True}},
                               "install": {"iso_source": f"http://127.0.0.1:{HTTP_PORT}/"
                                           f"{STANDIN}", "iso_sha256": sha}}}
    got = lab.salt(HEAD, "state.sls", "provisioning.media", f"pillar={json.dumps(pillar)}",
                   "-t", "300", timeout=600)
    ret = got.get(HEAD)
    assert isinstance(ret, dict), f"{HEAD}: provisioning.media did not return states: {ret}"
    return {v["__id__"]: v for v in ret.values()}


def boot_urls(lab: Lab) -> dict[str, str]:
    """The kernel, initrd and ISO URLs of the render: a node's install.ipxe and
    grub-install.cfg where a node installs from site.install (Ubuntu), else the pillar's
    site.install paths on the boot HTTP base (the Debian lab's nodes use a preseed)."""
    hosts = lab.paths.render / "pxe" / "http" / "hosts"
    for node in lab.nodes:
        ipxe = (hosts / node.hostname / "install.ipxe").read_text()
        iso = re.search(r" url=(\S+)", ipxe)
        if iso is None:
            continue
        kernel = re.search(r"^kernel (\S+)", ipxe, re.M)
        initrd = re.search(r"^initrd --name initrd (\S+)", ipxe, re.M)
        grub = (hosts / node.hostname / "grub-install.cfg").read_text()
        gk = re.search(r"linux \$fleet_src/(\S+)", grub)
        gi = re.search(r"initrd \$fleet_src/(\S+)", grub)
        assert kernel and initrd and gk and gi, f"{node.hostname}: unexpected boot configs"
        return {"kernel": kernel.group(1), "initrd": initrd.group(1), "iso": iso.group(1),
                "grub_kernel": gk.group(1), "grub_initrd": gi.group(1)}
    prov = lab.pillar("provisioning")["provisioning"]
    port = prov["http_port"]
    base = f"http://{lab.plan.node(HEAD).address}" + ("" if port == 80 else f":{port}")
    inst = prov["install"]
    return {"kernel": f"{base}/{inst['kernel']}", "initrd": f"{base}/{inst['initrd']}",
            "iso": inst["iso_url"], "grub_kernel": inst["kernel"],
            "grub_initrd": inst["initrd"]}


@pytest.fixture(scope="module")
def standin(lab: Lab) -> Iterator[dict[str, str]]:
    """The stand-in ISO on the head node, served on its loopback; its files' sha256s."""
    lab.salt(HEAD, "pkg.install", "xorriso", "-t", "300", timeout=600)
    head_sh(lab, f"rm -rf {WORK} && mkdir -p {WORK}/tree/casper {WORK}/www && "
                 f"head -c 3000000 /dev/urandom > {WORK}/tree/casper/vmlinuz && "
                 f"head -c 5000000 /dev/urandom > {WORK}/tree/casper/initrd && "
                 f"xorriso -as mkisofs -quiet -R -V STANDIN -o {WORK}/www/{STANDIN} "
                 f"{WORK}/tree")
    sums = head_sh(lab, f"sha256sum {WORK}/www/{STANDIN} {WORK}/tree/casper/vmlinuz "
                        f"{WORK}/tree/casper/initrd").split()
    head_sh(lab, f"systemd-run --unit {HTTP_UNIT} python3 -m http.server --bind 127.0.0.1 "
                 f"--directory {WORK}/www {HTTP_PORT} && for i in $(seq 50); do "
                 f"curl -sf -o /dev/null http://127.0.0.1:{HTTP_PORT}/{STANDIN} && exit 0; "
                 "sleep 0.2; done; exit 1")
    media = lab.pillar("provisioning")["provisioning"]["media"]
    images = "/srv/fleet/images"  # salt/provisioning/defaults.yaml images_dir
    yield {"iso": sums[0], "kernel": sums[2], "initrd": sums[4]}
    podman_exec(lab, HEAD, "systemctl", "stop", HTTP_UNIT)
    podman_exec(lab, HEAD, "rm", "-rf", WORK, f"{images}/{media['iso']}",
                f"{images}/{media['iso']}.unpacked", f"{images}/{media['kernel']}",
                f"{images}/{media['initrd']}")


def test_the_head_serves_the_iso_kernel_and_initrd_at_the_rendered_urls(
        lab: Lab, standin: dict[str, str]) -> None:
    first = apply_media(lab, standin["iso"])
    failed = {k: v["comment"] for k, v in first.items() if v["result"] is not True}
    assert not failed, failed
    assert first[ISO_STATE]["changes"] and first[UNPACK_STATE]["changes"]

    urls = boot_urls(lab)
    head = str(lab.plan.node(HEAD).address)
    for what in ("kernel", "initrd", "iso"):
        assert urlsplit(urls[what]).hostname == head, urls[what]
    assert fetch_sha256(lab, urls["kernel"]) == standin["kernel"]
    assert fetch_sha256(lab, urls["initrd"]) == standin["initrd"]
    assert fetch_sha256(lab, urls["iso"]) == standin["iso"]
    # GRUB loads the same paths from (http,HEAD) or (tftp,HEAD)
    for what in ("kernel", "initrd"):
        path = urls[f"grub_{what}"]
        assert fetch_sha256(lab, f"http://{head}/{path}") == standin[what]
        assert fetch_sha256(lab, f"tftp://{head}/{path}") == standin[what]

    again = apply_media(lab, standin["iso"])
    changed = {k: v["changes"] for k, v in again.items() if v["changes"]}
    assert all(v["result"] is True for v in again.values()) and not changed, changed


def test_a_wrong_sha256_fails_the_iso_state_naming_it(
        lab: Lab, standin: dict[str, str]) -> None:
    apply_media(lab, standin["iso"])  # the good one in place (test order is not assumed)
    wrong = hashlib.sha256(b"not the stand-in").hexdigest()
    got = apply_media(lab, wrong)
    iso = got[ISO_STATE]
    assert iso["result"] is False, iso
    assert wrong in iso["comment"] and standin["iso"] in iso["comment"], iso["comment"]
    assert got[UNPACK_STATE]["result"] is False  # its requisite failed: nothing unpacked
    urls = boot_urls(lab)
    assert fetch_sha256(lab, urls["kernel"]) == standin["kernel"]
    assert fetch_sha256(lab, urls["iso"]) == standin["iso"]


def test_the_apt_cache_answers_for_the_mirror(lab: Lab) -> None:
    prov = lab.pillar("provisioning")["provisioning"]
    site = lab.pillar("site")["site"]
    port = prov["apt_cache"]["port"]
    head = str(lab.plan.node(HEAD).address)
    mirror = site["apt"]["mirror"].rstrip("/")
    parts = urlsplit(mirror)
    # the mirror as the nodes name it when it goes through the cache; the lab's mirror is
    # the archive itself: then the same upstream through the cache
    through = (mirror if parts.hostname == head
               else f"http://{head}:{port}/{parts.netloc}{parts.path}")
    codename = lab.salt(CLIENT, "grains.get", "oscodename", "-t", "30")[CLIENT]
    url = f"{through}/dists/{codename}/Release"
    out = podman_exec(lab, CLIENT, "curl", "-sS", "-f", "--max-time", "120", url,
                      timeout=180)
    assert out.returncode == 0, f"{CLIENT}: GET {url}: {out.stderr}"
    assert re.search(rf"^Codename: {codename}$", out.stdout, re.M), out.stdout[:300]
    # bound to the provisioning address only
    listen = podman_exec(lab, HEAD, "ss", "-Htln", f"sport = :{port}").stdout.split()
    assert f"{head}:{port}" in listen and f"0.0.0.0:{port}" not in listen, listen
    # an upstream the inventory does not name: refused (ForceManaged)
    refused = podman_exec(lab, CLIENT, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                          f"http://{head}:{port}/example.com/debian/dists/x/Release")
    assert refused.stdout == "403", refused.stdout


def test_the_apt_caches_maintenance_pages_need_the_stores_login(lab: Lab) -> None:
    """The maintenance actions of acng-report.html (expiry, imports, deletions, data
    counts) were open to every node: now they ask for the login of the secrets store
    (secrets.aptcache, `fleet secrets init`). The page itself (statistics) stays open."""
    port = lab.pillar("provisioning")["provisioning"]["apt_cache"]["port"]
    head = str(lab.plan.node(HEAD).address)
    page = f"http://{head}:{port}/acng-report.html?doCount=Count+Data"  # harmless action
    sls = lab.paths.secrets / "pillar" / "secrets" / "aptcache.sls"
    auth = yaml.safe_load(sls.read_text())["secrets"]["apt_cache_auth"]
    login = auth.split(" ", 1)[1]  # USER:PASSWORD

    def code(*extra: str) -> str:
        out = podman_exec(lab, CLIENT, "curl", "-s", "-o", "/dev/null", "-w",
                          "%{http_code}", "--max-time", "30", *extra, page, timeout=60)
        return out.stdout

    assert code() == "401", "the maintenance page answers without a login"
    assert code("-u", "fleet:not-the-password") == "401"
    assert code("-u", login) == "200"  # the lab store's login (a test: argv is fine)
    conf = podman_exec(lab, HEAD, "stat", "-c", "%a %U",
                       "/etc/apt-cacher-ng/zzz_fleet-admin.conf")
    assert conf.stdout.split() == ["600", "apt-cacher-ng"], conf.stdout
