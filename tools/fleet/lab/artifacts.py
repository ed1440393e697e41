"""The compute layer's pinned artifacts for the lab: its containers cannot reach the
package index, so the host fetches each wheel the lab inventory names under
``/srv/fleet/artifacts/`` (pip download, by the name and version in the file name) into
``.lab/artifacts``, which the lab's compute nodes mount there read-only. The Salt states
check each against the inventory's sha256, as on a real site.

One is not a wheel: the lab's compute.miniray is a STAND-IN tree (lab/miniray-standin/:
a worker.py that says it is one, a uv project with its own lock), packed here into a tar
whose bytes depend only on the tree's files (sorted names, no owners or times), so that
lab/overlay.yaml can pin its sha256 (miniray itself is not public on an index; the real
tree runs only in tests/lab/test_miniray.py, from FLEET_MINIRAY_SRC)."""

from __future__ import annotations

import io
import logging
import re
import tarfile
from pathlib import Path

from fleet.inventory.model import Inventory
from fleet.lab.paths import Paths
from fleet.lab.run import run

log = logging.getLogger(__name__)

IN_NODE = "/srv/fleet/artifacts/"
# a wheel's file name: name-version-(build-)?python-abi-platform.whl
WHEEL = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[A-Za-z0-9_.+!]+)-.+\.whl$")
STANDIN = "miniray-standin.tar"  # lab/overlay.yaml's compute.miniray
STANDIN_PREFIX = "miniray"  # the tar's top directory, as `git archive --prefix=miniray/`


def standin_tar(tree: Path) -> bytes:
    """The stand-in tree as a tar of fixed bytes: names sorted under miniray/, mode 0644
    (0755 for directories), owner root, time 0."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path in sorted(tree.rglob("*")):
            if "__pycache__" in path.parts:
                continue
            info = tarfile.TarInfo(f"{STANDIN_PREFIX}/{path.relative_to(tree).as_posix()}")
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "root", "root"
            if path.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                data = path.read_bytes()
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def wanted(inv: Inventory) -> list[str]:
    """The wheel file names of the compute section's artifacts under /srv/fleet/artifacts/."""
    comp = inv.raw.compute
    if comp is None:
        return []
    sources = [comp.valkey.artifact.source, comp.uv.source]
    sources += [a.source for a in (comp.miniray, comp.triton.artifact) if a is not None]
    return [s[len(IN_NODE):] for s in sources if s.startswith(IN_NODE)]


def fetch(paths: Paths, inv: Inventory) -> None:
    """Download the missing ones into .lab/artifacts (kept between bring-ups)."""
    d = paths.lab / "artifacts"
    d.mkdir(parents=True, exist_ok=True)
    for name in wanted(inv):
        if name == STANDIN:  # rebuilt each time: the states check its sha256
            (d / name).write_bytes(standin_tar(paths.repo / "lab" / "miniray-standin"))
            log.warning("compute.miniray in the lab is a STAND-IN (lab/miniray-standin), "
                        "not miniray")
            continue
        fetch_wheel(paths.venv_bin / "pip", d, name)


def fetch_wheel(pip: Path, d: Path, name: str) -> Path:
    """The wheel file ``name`` in ``d``, downloaded with ``pip`` (by the name and version in
    the file name) where it is not there yet; the caller checks its sha256."""
    if (d / name).is_file():
        return d / name
    m = WHEEL.match(name)
    if m is None:
        raise ValueError(f"{IN_NODE}{name}: not a wheel file name; put the file into "
                         f"{d} by hand")
    log.info("fetching %s for the lab's compute nodes", name)
    run([str(pip), "download", "--quiet", "--disable-pip-version-check",
         "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
         "--platform", name.rsplit("-", 1)[1].removesuffix(".whl").split(".")[0],
         "-d", str(d), f"{m['name']}=={m['version']}"], timeout=900)
    if not (d / name).is_file():
        raise FileNotFoundError(f"pip did not download {name} into {d}")
    return d / name
