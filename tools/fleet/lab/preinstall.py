"""Lab images that carry the packages each node's states install (`fleet lab up`).

A lab node's first highstate used to download and install every package of its roles
(Prometheus, nginx, dnsmasq, Slurm, munge, apt-cacher-ng, ...) on a 2-core host, and
every reinstall test did it again. Here the lab's own highstate of each node is rendered
in-process (the renderer of `make check-packages`: fleet/saltrender.py, over the
lab render's pillar with lab/pillar merged over it, for the lab's OS), its ``pkg``
installs collected as `make check-packages` collects them (fleet.apt.facts), and
each distinct set is installed into an image derived from the lab's minion image. The
states stay the one definition of what a node has; the image only does their downloads
ahead of time, once per machine (the tag is a hash of the inputs). A set is installed
into the image of a smaller set where one exists (a node with one role more than another
gets that role's packages only; apt fetches only what the image lacks); each image
records its set in its labels for that.

What the image does not do for the states:

- no service starts while the image is built (``policy-rc.d`` answers 101), and every
  service the states manage (``service.running``/``service.enabled``) is disabled in
  the image: the first highstate must still enable and start each one, as on a node
  that the installer just left;
- packages that create a host's identity at install time are left to the highstate
  (``IDENTITY``): an image is shared by several nodes;
- the states' pins and holds are not applied here: the highstate applies them (it
  changes a version only where the archive's candidate is not the pinned one).
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fleet.apt.facts import NodeFacts, from_lowstate
from fleet.lab import podman as pm
from fleet.lab import siterepo
from fleet.lab.paths import PREFIX, Paths
from fleet.lab.plan import Plan
from fleet.packages.highstates import saltrender, write_secrets_root
from fleet.render import bootstrap

log = logging.getLogger("fleet.lab")

# package -> why the highstate installs it on each node itself
IDENTITY = {
    "openssh-server": "its postinst generates the host keys: nodes sharing an image "
                      "would share them",
}
SERVICE_FUNS = ("running", "enabled")


@dataclass(frozen=True)
class NodeSet:
    """What one node's highstate installs (in its order) and the services it manages; its
    apt facts (holds, pins, sources) for the site repository, not part of the set."""

    packages: tuple[str, ...]
    services: tuple[str, ...]
    facts: NodeFacts = field(default_factory=NodeFacts, compare=False, hash=False)


@dataclass(frozen=True)
class RepoMount:
    """The lab's site repository as the image builds read it: its directory on the host,
    where it is mounted, and the source, key and pin files the builder writes (and removes
    again: the highstate writes the node's own)."""

    host_dir: Path
    where: str  # the inventory's site.apt.repo
    files: dict[str, str]
    digest: str

    def script(self) -> str:
        dirs = sorted({str(Path(f).parent) for f in [*self.files, bootstrap.SITE_REPO_KEYRING]})
        out = [f"install -d -m 0755 {' '.join(dirs)}",
               f"cp {self.where}/{bootstrap.SITE_REPO_KEY_FILE} {bootstrap.SITE_REPO_KEYRING}"]
        for path, text in self.files.items():
            out.append(f"cat > {path} <<'FLEET_EOF'\n{text}FLEET_EOF")
        return "\n".join(out) + "\n"

    def cleanup(self) -> str:
        """What :meth:`script` wrote and apt's lists of it (named after the path)."""
        lists = "/var/lib/apt/lists/" + self.where.replace("/", "_") + "_*"
        return " ".join([*self.files, bootstrap.SITE_REPO_KEYRING, lists])


def _lab_pillar(paths: Paths) -> dict[str, Any]:
    """lab/pillar (lab.sls, the generated lab_mkv.sls, the OS's) merged as its top does."""
    out: dict[str, Any] = {}
    for f in (paths.lab_pillar / "lab.sls", paths.lab / "pillar-gen" / "lab_mkv.sls",
              paths.os_pillar):
        if f.exists():
            out = _merge(out, yaml.safe_load(f.read_text()) or {})
    return out


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: _merge(base.get(k), v) for k, v in over.items()}}
    return over


def node_sets(paths: Paths, plan: Plan) -> dict[str, NodeSet]:
    """hostname -> what its lab highstate installs and manages (the lab render must be
    written: plan.render)."""
    render = saltrender()
    extra = _lab_pillar(paths)
    out: dict[str, NodeSet] = {}
    with tempfile.TemporaryDirectory() as tmp:
        secrets = Path(tmp) / "secrets"
        write_secrets_root(secrets)
        renderer = render.Renderer(paths.repo / "salt", paths.render / "pillar", secrets,
                                   Path(tmp) / "cache")
        site_pillar = renderer.pillar
        renderer.pillar = lambda node: _merge(site_pillar(node), extra)
        for node in plan.nodes:
            rendered = renderer.render(node.hostname, paths.os)
            if rendered.errors:
                raise RuntimeError(f"the lab highstate of {node.hostname} does not render: "
                                   + "; ".join(rendered.errors[:5]))
            facts = from_lowstate(rendered.lowstate, rendered.files)
            services = [str(c["name"]) for c in rendered.lowstate
                        if c["state"] == "service" and c["fun"] in SERVICE_FUNS]
            out[node.hostname] = NodeSet(
                tuple(p for p in facts.installs if p not in IDENTITY and p not in facts.removes),
                tuple(dict.fromkeys(services)), facts)
    return out


# the labels an image records its inputs in (what a later, larger set is built on)
BASE_LABEL = "fleet.lab.base"
PACKAGES_LABEL = "fleet.lab.packages"
SERVICES_LABEL = "fleet.lab.services"


def tag_for(base: str, nset: NodeSet, repo_mount: RepoMount | None = None) -> str:
    repo = base.rsplit(":", 1)[0]
    h = hashlib.sha256()
    h.update(SCRIPT.encode())
    if repo_mount is not None:
        h.update(repo_mount.digest.encode())
        h.update(repr(sorted(repo_mount.files.items())).encode())
    h.update(base.encode())
    h.update(" ".join(sorted(nset.packages)).encode())
    h.update(" ".join(sorted(nset.services)).encode())
    return f"{repo}-pkgs:{h.hexdigest()[:16]}"


SCRIPT = """set -e
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
# nothing starts while the image is built: no systemd runs here, and invoke-rc.d would
# fall back to the packages' init scripts
printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d
chmod 0755 /usr/sbin/policy-rc.d
# the site package repository (the pinned and held packages), as head-01 reads it
{repo_setup}apt-get update -q
# --no-upgrade: in the image of a smaller set, what is installed stays as it is (the
# highstate decides versions)
apt-get install -y -q --no-install-recommends --no-upgrade {packages}
# the states enable and start these themselves (units the states write do not exist yet)
for unit in {services}; do
  if [ "$(systemctl --root=/ is-enabled "$unit" 2>/dev/null)" = enabled ]; then
    systemctl --root=/ disable "$unit"
  fi
done
rm -f /usr/sbin/policy-rc.d {repo_files}
apt-get clean
"""


def _closest(paths: Paths, base: str, nset: NodeSet) -> str:
    """The image to install ``nset`` into: the existing image of ``base`` whose recorded
    set is the largest part of ``nset`` (its packages and services), else ``base``."""
    repo = base.rsplit(":", 1)[0] + "-pkgs"
    out = pm.podman(paths, "images", "--format", "{{.Repository}}:{{.Tag}}",
                    "--filter", f"reference={repo}", check=False).stdout
    best, size = base, 0
    for tag in out.split():
        labels = pm.inspect(paths, tag).get("Config", {}).get("Labels") or {}
        if labels.get(BASE_LABEL) != base:
            continue
        pkgs = set(labels.get(PACKAGES_LABEL, "").split())
        services = set(labels.get(SERVICES_LABEL, "").split())
        if pkgs <= set(nset.packages) and services <= set(nset.services) and len(pkgs) > size:
            best, size = tag, len(pkgs)
    return best


def build(paths: Paths, base: str, nset: NodeSet, repo_mount: RepoMount | None = None
          ) -> tuple[str, bool]:
    """The image of ``base`` with ``nset``'s packages installed (from the site repository
    where ``repo_mount`` is given); (tag, built)."""
    tag = tag_for(base, nset, repo_mount)
    if pm.exists(paths, "image", tag):
        return tag, False
    t0 = time.monotonic()
    builder = f"{PREFIX}-imagebuild-{tag.rsplit(':', 1)[1]}"
    pm.podman(paths, "rm", "-f", builder, check=False)
    start = _closest(paths, base, nset)
    log.info("installing %d packages into %s (from %s)", len(nset.packages), tag, start)
    script = SCRIPT.format(packages=" ".join(nset.packages),
                           services=" ".join(nset.services) or "''",
                           repo_setup=repo_mount.script() if repo_mount else "",
                           repo_files=repo_mount.cleanup() if repo_mount else "")
    mount = ["-v", f"{repo_mount.host_dir}:{repo_mount.where}:ro"] if repo_mount else []
    labels = {BASE_LABEL: base, PACKAGES_LABEL: " ".join(sorted(nset.packages)),
              SERVICES_LABEL: " ".join(sorted(nset.services))}
    changes = [a for k, v in labels.items() for a in ("--change", f"LABEL {k}={json.dumps(v)}")]
    try:
        pm.podman(paths, "run", "-i", "--name", builder, *mount, start, "sh", "-s",
                  input=script, timeout=3600)
        pm.podman(paths, "commit", "--quiet", "--change", 'CMD ["/sbin/init"]', *changes,
                  builder, tag)
    finally:
        pm.podman(paths, "rm", "-f", builder, check=False)
    log.info("%s built in %.0f s", tag, time.monotonic() - t0)
    return tag, True


def images(paths: Paths, plan: Plan, base: str, sets: dict[str, NodeSet]) -> dict[str, str]:
    """hostname -> its image: ``base`` with what its highstate installs (``sets``:
    :func:`node_sets`), from the lab's site repository (filled: fleet.lab.siterepo);
    older images of that repository that no node uses any more are pruned."""
    repo_mount = _repo_mount(paths, plan)
    distinct = list(dict.fromkeys(sets.values()))
    # at once: mostly downloads, and each set in its own builder container
    with ThreadPoolExecutor(max_workers=len(distinct) or 1) as pool:
        built = list(pool.map(lambda nset: build(paths, base, nset, repo_mount)[0], distinct))
    tags = dict(zip(distinct, built, strict=True))
    _prune(paths, base, set(tags.values()))
    return {host: tags[nset] for host, nset in sets.items()}


def _repo_mount(paths: Paths, plan: Plan) -> RepoMount | None:
    inv = plan.inventory
    if inv.raw.site.apt.repo is None:
        return None
    suite = siterepo.codename(paths)
    files = {bootstrap.SITE_REPO_SOURCES: bootstrap.site_repo_sources(inv, suite, local=True),
             bootstrap.SITE_REPO_PIN: bootstrap.site_repo_pin()}
    return RepoMount(paths.site_repo, inv.raw.site.apt.repo, files,
                     siterepo.packages_digest(paths))


def _prune(paths: Paths, base: str, keep: set[str]) -> None:
    repo = base.rsplit(":", 1)[0] + "-pkgs"
    out = pm.podman(paths, "images", "--format", "{{.Repository}}:{{.Tag}}",
                    "--filter", f"reference={repo}", check=False).stdout
    for old in out.split():
        if old not in keep:
            pm.podman(paths, "rmi", old, check=False)  # one a container uses stays
