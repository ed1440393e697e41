"""What the installer and the provisioning host need: deployment directories apart, the apt
cache's URLs, and the install media under the served images directory."""

from __future__ import annotations

from collections.abc import Iterator

from fleet.inventory import aptcache
from fleet.inventory.checks.ctx import Ctx
from fleet.inventory.model import YamlPath
from fleet.inventory.types import rel_path
from fleet.problems import Problem, dotted, short

# Directories outside the inventory that deployments own (salt/provisioning/defaults.yaml).
IMAGES_DIR = "/srv/fleet/images"


def _inside(a: str, b: str) -> bool:
    return a == b or a.startswith(b.rstrip("/") + "/")


def check_paths(c: Ctx) -> Iterator[Problem]:
    """The directories that states create, sync into (rsync --delete) or own must be apart:
    none may equal or contain another (the checkout holds the secrets root)."""
    site = c.raw.site
    dirs: list[tuple[str, str, YamlPath | None]] = [
        (site.checkout, "the checkout (and the secrets root in it)", ("site", "checkout")),
        (site.pxe_root, "pxe_root", ("site", "pxe_root")),
        (site.pxe_state, "pxe_state", ("site", "pxe_state")),
        (site.pxe_state + "-tokens", "the install tokens directory (pxe_state-tokens)", None),
        (IMAGES_DIR, "the installer images directory", None),
    ]
    if site.apt.repo is not None:
        dirs.append((site.apt.repo, "the site package repository", ("site", "apt", "repo")))
    if c.raw.mkv is not None:
        for aname, array in c.raw.mkv.arrays.items():
            dirs.append((array.index_path, f"the index of mkv array {aname}",
                         ("mkv", "arrays", aname, "index_path")))
    for i, (path, what, ypath) in enumerate(dirs):
        for other, owhat, opath in dirs[:i]:
            if not (_inside(path, other) or _inside(other, path)):
                continue
            how = "is" if path == other else ("is inside" if _inside(path, other)
                                              else "contains")
            where = f" ({c.src.pos(opath)})" if opath is not None else ""
            target = ypath if ypath is not None else opath
            assert target is not None
            yield c.problem(target, f"{what} {path} {how} {owhat} {other}{where}", code="overlap",
                            hint="each deployment directory needs a tree of its own")
            break


def check_apt_cache(c: Ctx) -> Iterator[Problem]:
    """The apt URLs that name the provisioning host go through its apt-cacher-ng: acng's
    URL syntax (the upstream host first), and all on the one port it listens on."""
    site = c.raw.site
    prov = c.nodes.get(site.provisioning_host)
    if prov is None:
        return
    first: aptcache.AptUrl | None = None
    for u in aptcache.classify(site, prov):
        # every upstream gets a Remap- line (aptcache.pillar), one fetched directly too:
        # one that cannot be a word of it was dropped from the cache's list unsaid
        if u.error is not None:
            yield c.problem(u.path, f"{short(u.url)}: {u.error}", code="invalid")
            continue
        if not u.through:
            continue
        if first is None:
            first = u
        elif u.port != first.port:
            yield c.problem(u.path, f"port {u.port} differs from {dotted(first.path)}'s "
                            f"port {first.port} ({c.src.pos(first.path)}): the apt cache on "
                            f"{prov.hostname} listens on one port", code="mismatch")


def _rel_ok(value: str) -> bool:
    try:
        rel_path(value)
    except ValueError:
        return False
    return True


def check_install_media(c: Ctx) -> Iterator[Problem]:
    """The provisioning role puts the ISO and the kernel and initrd it unpacks into its
    images directory, which the boot HTTP server serves as /images/: so that is where
    site.install must name them."""
    site = c.raw.site
    prov = c.nodes.get(site.provisioning_host)
    media = site.install
    base: YamlPath = ("site", "install")
    for key in ("kernel", "initrd"):
        value = getattr(media, key)
        if not value.startswith("images/") or value == "images/":
            yield c.problem((*base, key), f"{value} is not under images/: the provisioning "
                            "role unpacks it from the ISO into its images directory, served "
                            "as images/", code="invalid")
    if media.kernel == media.initrd:
        yield c.problem((*base, "initrd"), f"{media.initrd} is also the kernel",
                        code="invalid")
    if prov is None:
        return
    port = "" if site.http_port == 80 else f":{site.http_port}"
    want = f"http://{prov.address}{port}/images/"
    if not media.iso_url.startswith(want) or len(media.iso_url) == len(want) \
            or media.iso_url.endswith("/") or "?" in media.iso_url or "#" in media.iso_url:
        yield c.problem((*base, "iso_url"), f"{short(media.iso_url)} is not a file under "
                        f"{want}: the provisioning role serves the ISO from its images "
                        "directory on the boot HTTP server", code="invalid")
    elif not _rel_ok(media.iso_url[len(want):]):
        yield c.problem((*base, "iso_url"), f"{short(media.iso_url)}: the file's path under "
                        "/images/ must be plain (letters, digits, ._+-, no percent-encoding)",
                        code="invalid")
    elif media.iso_url[len(want):] in (media.kernel[7:], media.initrd[7:]):
        yield c.problem((*base, "iso_url"), f"{short(media.iso_url)} is the kernel's or "
                        "initrd's path", code="invalid")
