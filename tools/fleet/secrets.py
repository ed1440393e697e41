"""The git-ignored secrets store on the Salt master (see docs/secrets.md).

``fleet secrets init`` creates what is missing, never overwrites a secret, and keeps every
directory 0700 and every file 0600.
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

MUNGE_SLS = Path("pillar/secrets/munge.sls")
MUNGE_KEY_BYTES = 1024  # as `dd if=/dev/random bs=1024 count=1` in Slurm's docs


def _mkdir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)


def _write_new(path: Path, text: str) -> bool:
    """Create ``path`` with mode 0600; False if it already exists (left untouched)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return True


def init(root: Path) -> list[str]:
    """Create the store under ``root``; returns the paths it created."""
    created = []
    for d in (root, root / "pillar", root / "pillar" / "secrets", root / "bmc"):
        if not d.exists():
            created.append(os.fspath(d))
        _mkdir(d)
    key = base64.b64encode(secrets.token_bytes(MUNGE_KEY_BYTES)).decode()
    sls = ("#!yaml\n# The munge key of the Slurm cluster. Secret: never commit, never copy.\n"
           f"secrets:\n  munge_key: {key}\n")
    if _write_new(root / MUNGE_SLS, sls):
        created.append(os.fspath(root / MUNGE_SLS))
    for path in (root / MUNGE_SLS,):
        path.chmod(0o600)
    return created


def missing_bmc_secrets(root: Path, names: set[str]) -> list[str]:
    return sorted(n for n in names if not (root / "bmc" / n).is_file())
