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


def _in_checkout(paths: Paths, f: Path) -> str:
    return f"{CHECKOUT}/{f.relative_to(paths.repo)}"


def mounts(paths: Paths) -> list[str]:
    """``podman create`` arguments for the head node (see the module docstring)."""
    wheels_dir(paths).mkdir(parents=True, exist_ok=True)
    return ["-v", f"{paths.inventory}:{CHECKOUT}/inventory.yaml:ro",
            *[a for f in paths.overlays for a in ("-v", f"{f}:{_in_checkout(paths, f)}:ro")],
            "-v", f"{wheels_dir(paths)}:{WHEELS}:ro"]


def python_version(paths: Paths, node: LabNode) -> str:
    """The node's python3 (X.Y): the wheels must be built for it."""
    return pm.exec_(paths, node.container, "python3", "-c",
                    "import sys; print('%d.%d' % sys.version_info[:2])").stdout.strip()


def _source_hash(paths: Paths) -> str:
    h = hashlib.sha256()
    for f in sorted((paths.repo / "tools" / "fleet").rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            h.update(str(f.relative_to(paths.repo)).encode())
            h.update(f.read_bytes())
    for name in ("pyproject.toml", "requirements.txt"):
        h.update((paths.repo / name).read_bytes())
    return h.hexdigest()[:16]


def build_wheels(paths: Paths, python: str) -> str:
    """fleet's wheel and its dependencies (pinned by requirements.txt) for Python
    ``python`` (X.Y) in ``.lab/fleet-wheels``; rebuilt when fleet's sources change.
    Returns their hash."""
    d = wheels_dir(paths)
    digest = f"{_source_hash(paths)}-py{python}"
    stamp = d / ".source"
    if stamp.exists() and stamp.read_text().strip() == digest:
        return digest
    d.mkdir(parents=True, exist_ok=True)
    for old in d.glob("*.whl"):
        old.unlink()
    log.info("building fleet's wheelhouse for the head node (Python %s) in %s", python, d)
    pip = str(paths.venv_bin / "pip")
    quiet = ["--quiet", "--disable-pip-version-check"]
    # from a copy: setuptools' build/ in the checkout could carry files since removed
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(paths.repo / "tools", src / "tools",
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        shutil.copy2(paths.repo / "pyproject.toml", src / "pyproject.toml")
        run([pip, "wheel", *quiet, "--no-build-isolation", "--no-deps", "-w", d, src],
            timeout=900)
    fleet_wheel = next(d.glob("fleet-*.whl"))
    # its dependencies as binary wheels for the node's Python (not this host's)
    run([pip, "download", *quiet, "--only-binary=:all:", "--python-version", python,
         "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
         "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
         "-d", d, "-c", paths.repo / "requirements.txt", fleet_wheel], timeout=900)
    stamp.write_text(digest + "\n")
    return digest


def install(paths: Paths, node: LabNode) -> bool:
    """Install fleet (wheels built for the node's Python) into the head node's /opt/fleet
    unless that exact build is there; returns True if it installed."""
    digest = build_wheels(paths, python_version(paths, node))
    marker = f"{VENV}/.fleet-source"
    have = pm.exec_(paths, node.container, "cat", marker, check=False).stdout.strip()
    if have == digest:
        return False
    wrapper = (f"#!/bin/sh\n# fleet lab: fleet with the lab's inventory (tools/fleet/lab/"
               f"headtools.py)\nexec {VENV}/bin/fleet \"$@\" -i {CHECKOUT}/inventory.yaml "
               f"{' '.join(f'--overlay {_in_checkout(paths, f)}' for f in paths.overlays)}\n")
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
