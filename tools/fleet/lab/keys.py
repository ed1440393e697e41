"""Minion keys pre-seeded the way the real install does: generated on the master side,
the public half accepted in the master's pki/minions/<id>, the private half put into the
node before salt-minion first starts. The master has neither auto_accept nor open_mode."""

from __future__ import annotations

import shutil
from pathlib import Path

from fleet.lab.paths import Paths
from fleet.lab.run import run


def ensure(paths: Paths, minion_id: str) -> tuple[Path, Path]:
    """Generate the key pair once; (re)install the public key as accepted."""
    d = paths.keys
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    pem, pub = d / f"{minion_id}.pem", d / f"{minion_id}.pub"
    if not (pem.exists() and pub.exists()):
        run([paths.venv_bin / "salt-key", "-c", paths.salt_etc,
             f"--gen-keys={minion_id}", f"--gen-keys-dir={d}"])
    accepted = paths.master_root / "pki" / "minions" / minion_id
    accepted.parent.mkdir(parents=True, exist_ok=True)
    if not accepted.exists() or accepted.read_bytes() != pub.read_bytes():
        shutil.copyfile(pub, accepted)
    return pem, pub
