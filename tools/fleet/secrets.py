"""The git-ignored secrets store on the Salt master (see docs/secrets.md).

``fleet secrets init`` creates what is missing, never overwrites a secret, and resets the
mode of everything in the store: every directory 0700, every file 0600 (symbolic links
are left as they are: their targets are not the store's). ``fleet validate`` reports a
profile's ``password_secret`` that names no usable password
(:func:`fleet.inventory.advice.password_problems`, through :func:`bmc_secret_problem`).
"""

from __future__ import annotations

import base64
import os
import secrets
import stat
from pathlib import Path

MUNGE_SLS = Path("pillar/secrets/munge.sls")
MUNGE_KEY_BYTES = 1024  # as `dd if=/dev/random bs=1024 count=1` in Slurm's docs
# the apt cache's maintenance pages (acng-report.html): HTTP basic auth, provisioning
# host only (pillar/top.sls: secrets.aptcache)
APTCACHE_SLS = Path("pillar/secrets/aptcache.sls")
APTCACHE_ADMIN = "fleet"
DIR_MODE, FILE_MODE = 0o700, 0o600


def _mkdir(path: Path) -> None:
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    path.chmod(DIR_MODE)


def _write_new(path: Path, text: str) -> bool:
    """Create ``path`` with mode 0600; False if it already exists (left untouched)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return True


def fix_modes(root: Path) -> list[str]:
    """Set every directory under ``root`` (itself included) to 0700 and every regular file
    to 0600, without following symbolic links; returns the paths whose mode changed."""
    fixed = []
    for dirpath, dirnames, filenames in os.walk(root):  # does not follow links
        paths = [Path(dirpath, n) for n in (*dirnames, *filenames)]
        if dirpath == os.fspath(root):
            paths.insert(0, root)
        for path in paths:
            st = path.lstat()
            want = (DIR_MODE if stat.S_ISDIR(st.st_mode)
                    else FILE_MODE if stat.S_ISREG(st.st_mode) else None)
            if want is not None and stat.S_IMODE(st.st_mode) != want:
                path.chmod(want)
                fixed.append(os.fspath(path))
    return fixed


def init(root: Path) -> list[str]:
    """Create the store under ``root`` and reset its modes; returns the paths it created."""
    # here, not at the top: every validation reads BMC secrets through this module, and
    # these two bring subprocess, shlex and tempfile
    from fleet import backupsftp as sftp
    from fleet.repo import signing

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
    if _write_new(root / APTCACHE_SLS, aptcache_sls(secrets.token_urlsafe(24))):
        created.append(os.fspath(root / APTCACHE_SLS))
    created += signing.ensure(root)
    created += sftp.ensure(root)
    fix_modes(root)
    return created


def aptcache_sls(password: str) -> str:
    """The apt cache's admin login as apt-cacher-ng reads it (``AdminAuth: user:password``;
    the password is URL-safe base64: no ``:`` or space), the whole line, so that the state
    can write it from the pillar without ever naming it (contents_pillar)."""
    return ("#!yaml\n# The apt cache's admin login (provisioning host only). Secret: "
            "never commit, never copy.\n"
            f"secrets:\n  apt_cache_auth: 'AdminAuth: {APTCACHE_ADMIN}:{password}'\n")


def missing_bmc_secrets(root: Path, names: set[str]) -> list[str]:
    return sorted(n for n in names if not (root / "bmc" / n).is_file())


def bmc_secret_problem(root: Path, name: str) -> str | None:
    """Why ``root/bmc/name`` holds no usable BMC password, or None if it does."""
    path = root / "bmc" / name
    try:
        st = path.stat()
    except FileNotFoundError:
        return f"no such secret: {path} does not exist"
    except OSError as exc:
        return f"secret {path} cannot be read: {exc.strerror}"
    if not stat.S_ISREG(st.st_mode):
        return f"secret {path} is not a regular file"
    try:
        value = path.read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        return f"secret {path} cannot be read: {getattr(exc, 'strerror', None) or exc}"
    if not value.strip():
        return f"secret {path} is empty"
    return None
