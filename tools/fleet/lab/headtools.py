"""The fleet CLI on the lab's head node, as `make deps` puts it on a real head node.

On the site, the head node holds the checkout and runs `fleet` from its `.venv`; there
`fleet pxe set|status` switches the boot mode that its nginx serves. In the lab the
checkout and `make render` stay on the host, so the head node's container gets:

- the inventory and the lab overlay, read-only, at ``/srv/fleet/checkout`` (``fleet -i
  /srv/fleet/checkout/inventory.yaml --overlay .../lab/overlay.yaml``, wrapped as
  ``/usr/local/sbin/fleet-lab``);
- fleet itself in ``/opt/fleet``, installed with pip from a wheelhouse built on the host
  (``.lab/fleet-wheels``: fleet's wheel and its pinned dependencies), since PyPI is not
  reachable from the containers.
"""

from __future__ import annotations

import hashlib
import logging
import shlex
import shutil
import tempfile
from pathlib import Path

from fleet.lab import podman as pm
from fleet.lab.paths import Paths
from fleet.lab.plan import LabNode
from fleet.lab.run import run

log = logging.getLogger("fleet.lab")

CHECKOUT = "/srv/fleet/checkout"
WHEELS = "/srv/fleet/wheels"
VENV = "/opt/fleet"
WRAPPER = "/usr/local/sbin/fleet-lab"


def wheels_dir(paths: Paths) -> Path:
    return paths.lab / "fleet-wheels"


def mounts(paths: Paths) -> list[str]:
    """``podman create`` arguments for the head node (see the module docstring)."""
    return ["-v", f"{paths.inventory}:{CHECKOUT}/inventory.yaml:ro",
            "-v", f"{paths.overlay}:{CHECKOUT}/lab/overlay.yaml:ro",
            "-v", f"{wheels_dir(paths)}:{WHEELS}:ro"]


def _source_hash(paths: Paths) -> str:
    h = hashlib.sha256()
    for f in sorted((paths.repo / "tools" / "fleet").rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            h.update(str(f.relative_to(paths.repo)).encode())
            h.update(f.read_bytes())
    for name in ("pyproject.toml", "requirements.txt"):
        h.update((paths.repo / name).read_bytes())
    return h.hexdigest()[:16]


def build_wheels(paths: Paths) -> str:
    """fleet's wheel and its dependencies (pinned by requirements.txt) in
    ``.lab/fleet-wheels``; rebuilt when fleet's sources change. Returns their hash."""
    d = wheels_dir(paths)
    digest = _source_hash(paths)
    stamp = d / ".source"
    if stamp.exists() and stamp.read_text().strip() == digest:
        return digest
    d.mkdir(parents=True, exist_ok=True)
    for old in d.glob("fleet-*.whl"):
        old.unlink()
    log.info("building fleet's wheelhouse for the head node in %s", d)
    # from a copy: setuptools' build/ in the checkout could carry files since removed
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(paths.repo / "tools", src / "tools",
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        shutil.copy2(paths.repo / "pyproject.toml", src / "pyproject.toml")
        run([paths.venv_bin / "pip", "wheel", "--quiet", "--disable-pip-version-check",
             "--no-build-isolation", "-w", d, "-c", paths.repo / "requirements.txt", src],
            timeout=900)
    stamp.write_text(digest + "\n")
    return digest


def install(paths: Paths, node: LabNode, digest: str) -> bool:
    """Install the wheelhouse's fleet into the head node's /opt/fleet unless that exact
    build is there; returns True if it installed."""
    marker = f"{VENV}/.fleet-source"
    have = pm.exec_(paths, node.container, "cat", marker, check=False).stdout.strip()
    if have == digest:
        return False
    wrapper = (f"#!/bin/sh\n# fleet lab: fleet with the lab's inventory (tools/fleet/lab/"
               f"headtools.py)\nexec {VENV}/bin/fleet \"$@\" -i {CHECKOUT}/inventory.yaml "
               f"--overlay {CHECKOUT}/lab/overlay.yaml\n")
    script = " && ".join([
        f"test -x {VENV}/bin/pip || python3 -m venv {VENV}",
        f"{VENV}/bin/pip install --quiet --disable-pip-version-check --no-index "
        f"--force-reinstall --no-deps --find-links {WHEELS} fleet",
        f"{VENV}/bin/pip install --quiet --disable-pip-version-check --no-index "
        f"--find-links {WHEELS} fleet",
        f"printf %s {shlex.quote(wrapper)} > {WRAPPER}",
        f"chmod 0755 {WRAPPER}",
        f"ln -sfn {VENV}/bin/fleet /usr/local/bin/fleet",
        f"echo {digest} > {marker}",
    ])
    pm.exec_(paths, node.container, "sh", "-c", script, timeout=600)
    return True
