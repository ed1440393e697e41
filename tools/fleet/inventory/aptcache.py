"""The apt cache on the provisioning host (apt-cacher-ng, salt/provisioning/aptcache.sls).

The site's apt URLs (``site.apt.mirror``, ``site.apt.security_mirror``, ``site.salt.repo``
and each ``site.images.*.mirror``) that name the provisioning host go through its
apt-cacher-ng (except an image's mirror on its boot HTTP port, ``site.http_port``: files
its nginx serves), in acng's own URL syntax: the upstream's host is the first path
segment, ``HTTPS///`` before it for an https upstream::

    http://10.1.0.10:3142/archive.ubuntu.com/ubuntu          -> http://archive.ubuntu.com/ubuntu
    http://10.1.0.10:3142/HTTPS///packages.broadcom.com/x    -> https://packages.broadcom.com/x

Their port is the cache's port (one fact, written once in the inventory), and the upstreams
are the only ones the cache serves (``ForceManaged``, one ``Remap-`` each). A URL that does
not name the provisioning host (the lab's direct archive) is an upstream as it is: the
cache is then ready for it, though nothing is sent through it.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import urlsplit

from fleet.inventory import schema
from fleet.inventory.model import Node, YamlPath
from fleet.inventory.types import url as check_url

DEFAULT_PORT = 3142
HTTPS_PREFIX = "HTTPS///"


class AptUrl(NamedTuple):
    path: YamlPath     # where the inventory says it
    url: str
    through: bool      # names the provisioning host: goes through its cache
    port: int          # the URL's port (through the cache: the cache's port)
    upstream: str      # what the cache fetches (scheme://host/path, no trailing '/')
    error: str | None  # why it cannot go through the cache


def apt_urls(site: schema.Site) -> list[tuple[YamlPath, str]]:
    out: list[tuple[YamlPath, str]] = [(("site", "apt", "mirror"), site.apt.mirror)]
    if site.apt.security_mirror is not None:
        out.append((("site", "apt", "security_mirror"), site.apt.security_mirror))
    out.append((("site", "salt", "repo"), site.salt.repo))
    for name, image in site.images.items():
        out.append((("site", "images", name, "mirror"), image.mirror))
    return out


def _names(prov: Node, domain: str) -> set[str]:
    return {str(prov.address), prov.hostname, f"{prov.hostname}.{domain}"}


def classify(site: schema.Site, prov: Node) -> list[AptUrl]:
    names = _names(prov, site.domain)
    out = []
    for path, value in apt_urls(site):
        parts = urlsplit(value)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        # an installer image's mirror may be files the provisioning host's nginx serves
        # (its boot HTTP port); the apt and Salt URLs on that host are always the cache's
        served = path[1] == "images" and parts.scheme == "http" and port == site.http_port
        if parts.hostname not in names or served:
            out.append(AptUrl(path, value, False, port, value.rstrip("/"),
                              _remap_safe(value.rstrip("/"))))
            continue
        error = None
        rest = parts.path.lstrip("/")
        scheme = "http"
        if rest.startswith(HTTPS_PREFIX):
            scheme, rest = "https", rest[len(HTTPS_PREFIX):]
        upstream = f"{scheme}://{rest}".rstrip("/")
        if parts.scheme != "http":
            error = ("apt-cacher-ng on the provisioning host speaks plain HTTP: name an "
                     "https upstream as http://HOST:PORT/HTTPS///upstream-host/path")
        elif parts.query or parts.fragment:
            error = "a URL through the apt cache has no query or fragment"
        else:
            try:
                check_url(upstream)
                if not urlsplit(upstream).path.strip("/"):
                    raise ValueError("no path")
            except ValueError:
                error = ("through the apt cache the path names the upstream host, then its "
                         "path: http://HOST:PORT/archive.ubuntu.com/ubuntu (HTTPS/// before "
                         "the host for an https upstream)")
        out.append(AptUrl(path, value, True, port, upstream, error or _remap_safe(upstream)))
    return out


# what a Remap- line of apt-cacher-ng's config can hold as one word (" ; " separates its
# front end from its back ends, "#" starts a comment)
_REMAP_WORD = re.compile(r"[A-Za-z0-9._~:/%+-]+")


def _remap_safe(upstream: str) -> str | None:
    if _REMAP_WORD.fullmatch(upstream):
        return None
    return ("the upstream has characters an apt-cacher-ng Remap- line cannot hold "
            "(only letters, digits and ._~:/%+-)")


def remap_name(upstream: str) -> str:
    """acng's repository name of an upstream (its cache directory): stable across
    renders, whatever else the inventory lists."""
    parts = urlsplit(upstream)
    words = re.sub(r"[^a-z0-9]+", "-", f"{parts.hostname}{parts.path}".lower()).strip("-")
    return f"fleet-{'https-' if parts.scheme == 'https' else ''}{words}"


def port(site: schema.Site, prov: Node) -> int:
    """The cache's port: that of the first URL through it, else acng's default."""
    through = [u for u in classify(site, prov) if u.through]
    return through[0].port if through else DEFAULT_PORT


def pillar(site: schema.Site, prov: Node) -> dict[str, object]:
    names = _names(prov, site.domain)
    urls = classify(site, prov)
    # not the provisioning host's own nginx: the cache never fetches from itself
    upstreams = sorted({u.upstream for u in urls if u.error is None
                        and (u.through or urlsplit(u.url).hostname not in names)})
    return {"port": port(site, prov),
            "remaps": [{"name": remap_name(u), "upstream": u} for u in upstreams]}


def node_apt(site: schema.Site, prov: Node, node: Node) -> dict[str, str | None]:
    """The apt mirrors ``node`` installs from and keeps: the inventory's, except on the
    provisioning host itself, which fetches from their upstreams (its own cache is not
    there before its first highstate, nor while it is being installed)."""
    mirrors: dict[str, str | None] = {"mirror": site.apt.mirror,
                                      "security_mirror": site.apt.security_mirror}
    if node.hostname != prov.hostname:
        return mirrors
    upstream = {u.path[-1]: u.upstream for u in classify(site, prov)
                if u.through and u.error is None and u.path[:2] == ("site", "apt")}
    return {key: upstream.get(key, value) for key, value in mirrors.items()}
