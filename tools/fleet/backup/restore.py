"""``fleet restore``: onto a freshly installed head node (same name and address) the
master's keys, the minions' keys, the secrets, the journals and the boot modes come back
with their modes and owners (restic restores both as root), after the backup is verified
whole and found made by this fleet or an older one; never over a running master unless
told."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from fleet.backup import paths
from fleet.backup.manifest import Manifest, ManifestError
from fleet.backup.restic import Restic


class RestoreRefusedError(RuntimeError):
    """A restore that must not run as asked (said as is; nothing was written)."""


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


def manifest_of(restic: Restic, snapshot: str) -> Manifest:
    return Manifest.parse(restic.dump(snapshot, paths.STATE.path() / paths.MANIFEST))


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
    restic.restore(snapshot, root)
    restored_pki = root / pki_dir.relative_to(pki_dir.anchor)
    finger = master_finger(restored_pki) if manifest.master_finger else None
    return Restored(snapshot, manifest, root,
                    None if finger is None else finger == manifest.master_finger)
