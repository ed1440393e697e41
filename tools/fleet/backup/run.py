"""``fleet backup``: refuse a key kept beside the backup, write the manifest, back up every
item present, verify every byte (restic check --read-data), keep the last days and weeks,
and note the last good backup for ``fleet status``."""

from __future__ import annotations

import json
import os
import socket
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fleet
from fleet.backup import paths
from fleet.backup.manifest import Manifest, inventory_commit
from fleet.backup.restic import Restic
from fleet.master.text import stamp


class BackupRefusedError(ValueError):
    """A backup that must not be made as asked (the key beside it, a master key missing)."""


@dataclass(frozen=True)
class Setup:
    restic: Restic
    items: list[paths.Item]
    inventory: Path
    local_destination: Path | None = None  # a path destination: the key may not be in it
    keep: tuple[int, int] = (14, 8)
    ssh_command: str = ""  # an sftp destination: the command restic runs, to ask ssh why


@dataclass
class Made:
    snapshot: str
    manifest: Manifest
    initialised: bool
    absent: list[str] = field(default_factory=list)


def refuse_key_beside(setup: Setup) -> None:
    """The key is the operator's: never inside what is backed up or where the backup is,
    never readable by others than its owner."""
    key = setup.restic.password_file
    try:
        st = key.stat()
    except OSError as exc:
        raise BackupRefusedError(f"the backup key {key}: {exc.strerror}: write the operator's "
                            "restic password there (mode 0600) or name it with "
                            "--password-file") from None
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise BackupRefusedError(f"the backup key {key} is readable by others "
                            f"(mode {stat.S_IMODE(st.st_mode):04o}): chmod 0600 it")
    beside = [i.name for i in setup.items if paths.inside(key, i.path)]
    if setup.local_destination is not None and paths.inside(key, setup.local_destination):
        beside.append("the destination")
    if beside:
        raise BackupRefusedError(f"the backup key {key} is inside {', '.join(beside)}: it would "
                            "be stored beside the backup it opens; keep it elsewhere")


def write_manifest(setup: Setup) -> Manifest:
    from fleet.master.keys import master_finger

    missing = [i.name for i in setup.items if i.required and not i.path.exists()]
    if missing:
        raise BackupRefusedError(f"nothing to back up for {', '.join(missing)} "
                            f"({', '.join(str(i.path) for i in setup.items if i.name in missing)}"
                            "): is this the master?")
    state = paths.STATE.path()  # made first: the manifest's own item is present
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    commit, dirty = inventory_commit(setup.inventory)
    pki = next(i.path for i in setup.items if i.name == "salt-pki")
    manifest = Manifest(
        fleet=fleet.__version__, time=datetime.now(UTC).isoformat(timespec="seconds"),
        host=socket.gethostname(), inventory_commit=commit, inventory_dirty=dirty,
        master_finger=master_finger(pki),
        items=[{"name": i.name, "path": os.fspath(i.path), "present": i.path.exists()}
               for i in setup.items])
    tmp = state / f".{paths.MANIFEST}.tmp"
    tmp.write_text(manifest.text(), encoding="utf-8")
    tmp.replace(state / paths.MANIFEST)
    return manifest


def create(setup: Setup) -> Made:
    refuse_key_beside(setup)
    manifest = write_manifest(setup)
    initialised = not setup.restic.exists()
    if initialised:
        setup.restic.init()
    present = [i.path for i in setup.items if i.path.exists()]
    snapshot = setup.restic.backup(present, ["fleet", f"fleet-{fleet.__version__}"])
    setup.restic.check()
    setup.restic.forget(*setup.keep)
    note_last({"snapshot": snapshot, "time": manifest.time, "fleet": manifest.fleet,
               "repository": setup.restic.repository, "verified": True})
    return Made(snapshot, manifest, initialised,
                [i.name for i in setup.items if not i.path.exists()])


def note_last(entry: dict[str, Any]) -> None:
    """The last good backup, for fleet status (never a secret: no key, no path of one)."""
    state = paths.STATE.path()
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = state / f".{paths.LAST}.tmp"
    tmp.write_text(json.dumps(entry, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(state / paths.LAST)


def last() -> dict[str, Any] | None:
    """The last good backup, or None (never made, or its note unreadable)."""
    try:
        data = json.loads((paths.STATE.path() / paths.LAST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def last_line(entry: dict[str, Any] | None, now: datetime | None = None) -> str:
    """fleet status's line: when the last good backup was, or that there is none."""
    if entry is None:
        return "master backup: no good backup recorded here (fleet backup; docs/operations.md)"
    try:
        when = datetime.fromisoformat(str(entry["time"]))
        hours = ((now or datetime.now(UTC)) - when).total_seconds() / 3600
    except (KeyError, ValueError, TypeError):
        return "master backup: the note of the last backup cannot be read"
    stale = "  STALE: older than a day" if hours > 26 else ""
    shown = stamp(when.timestamp(), (now or datetime.now(UTC)).timestamp())
    return (f"master backup: last good {shown}, snapshot "
            f"{str(entry.get('snapshot', '?'))[:8]}, verified{stale}")
