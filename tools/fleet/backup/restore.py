"""``fleet restore``: onto a freshly installed head node (same name and address) the
master's keys, the minions' keys, the secrets, the journals and the boot modes come back
with their modes and owners (restic restores both as root), after the backup is verified
whole and found made by this fleet or an older one; never over a running master unless
told."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from fleet.backup import paths
from fleet.backup.manifest import Manifest, ManifestError
from fleet.backup.restic import Restic, ResticError


class RestoreRefusedError(RuntimeError):
    """A restore that must not run as asked (said as is; nothing was written)."""


class RestoreFailedError(RuntimeError):
    """A restore that stopped part way: which item, and the items restored before it."""


def _config_dir(argv: list[bytes]) -> str:
    """The config dir a salt-master was started with (``-c DIR``; default /etc/salt)."""
    for i, word in enumerate(argv):
        if word in (b"-c", b"--config-dir") and i + 1 < len(argv):
            return argv[i + 1].decode(errors="replace")
        if word.startswith(b"--config-dir="):
            return word.split(b"=", 1)[1].decode(errors="replace")
    return "/etc/salt"


def _argv(cmdline: bytes) -> list[bytes]:
    """A process's arguments; Salt's processes set their title (setproctitle), which
    /proc shows as one string: ``python .../salt-master -c DIR -d MainProcess``."""
    words = [w for w in cmdline.split(b"\0") if w]
    return words[0].split() if len(words) == 1 else words


def running_masters(salt_config: Path) -> list[int]:
    """The salt-master processes of ``salt_config`` in this PID namespace (a lab's
    containers, in their own, and a test's master of another config are not this
    host's master)."""
    try:
        ours = Path("/proc/self/ns/pid").readlink()
    except OSError:
        ours = None
    want = os.path.realpath(salt_config)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if ours is not None and (entry / "ns" / "pid").readlink() != ours:
                continue
            argv = _argv((entry / "cmdline").read_bytes())
        except OSError:
            continue
        named = any(a.rsplit(b"/", 1)[-1].startswith(b"salt-master") for a in argv[:2])
        if named and os.path.realpath(_config_dir(argv)) == want:
            found.append(int(entry.name))
    return found


@dataclass
class Restored:
    snapshot: str
    manifest: Manifest
    root: Path
    finger_holds: bool | None
    items: list[str] = field(default_factory=list)
    moved_aside: list[str] = field(default_factory=list)


def manifest_of(restic: Restic, snapshot: str) -> Manifest:
    return Manifest.parse(restic.dump(snapshot, paths.STATE.path() / paths.MANIFEST))


def _under(root: Path, path: Path) -> Path:
    return root / path.relative_to(path.anchor)


def put_back(restic: Restic, snapshot: str, root: Path, item: Path, stamp: str
             ) -> Path | None:
    """Restore one item whole: into a staging directory beside it (the same filesystem),
    then renamed into place; what was there (a fresh install's key, say) is renamed
    aside, never deleted. Returns where it went aside, if anything was there."""
    dest = _under(root, item)
    dest.parent.mkdir(parents=True, exist_ok=True)
    stage = dest.parent / f".{dest.name}.fleet-restore"
    shutil.rmtree(stage, ignore_errors=True)
    try:
        restic.restore(snapshot, stage, item)
        aside = None
        if dest.exists() or dest.is_symlink():
            aside = dest.with_name(f"{dest.name}.before-restore-{stamp}")
            dest.rename(aside)
        _under(stage, item).rename(dest)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return aside


def restore(restic: Restic, snapshot: str, root: Path, pki_dir: Path, salt_config: Path,
            *, force: bool) -> Restored:
    from fleet.master.keys import master_finger

    manifest = manifest_of(restic, snapshot)
    try:
        manifest.refuse_newer()
    except ManifestError as exc:
        raise RestoreRefusedError(str(exc)) from None
    masters = running_masters(salt_config)
    if masters and not force:
        pids = ", ".join(map(str, masters))
        raise RestoreRefusedError(f"a salt-master is running here (pid {pids}): stop it "
                                  "first (systemctl stop salt-master), or --force to "
                                  "restore over it")
    restic.check()  # a corrupted backup is refused before anything is written
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    done = Restored(snapshot, manifest, root, None)
    for item in manifest.items:
        if not item.get("present"):
            continue
        try:
            aside = put_back(restic, snapshot, root, Path(item["path"]), stamp)
        except (OSError, ResticError) as exc:
            raise RestoreFailedError(
                f"{item['name']} ({item['path']}) could not be restored: {exc}; restored "
                f"before it: {', '.join(done.items) or 'nothing'}") from None
        done.items.append(str(item["name"]))
        if aside is not None:
            done.moved_aside.append(str(aside))
    finger = master_finger(_under(root, pki_dir)) if manifest.master_finger else None
    done.finger_holds = None if finger is None else finger == manifest.master_finger
    return done
