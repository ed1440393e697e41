"""The site repository's signing key: an OpenPGP key in the secrets store (GnuPG home
``repo-gnupg``, mode 0700), made by ``fleet secrets init``. Its public half reaches the
nodes through the pillar (``secrets.siterepo``, every node) and the installer through the
repository's own ``fleet-site.asc``: apt trusts only that key for this repository."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HOME = "repo-gnupg"
PILLAR = Path("pillar/secrets/siterepo.sls")
UID = "fleet site package repository"
TIMEOUT = 60


class SigningError(Exception):
    pass


def home(root: Path) -> Path:
    return root / HOME


@contextmanager
def short(gnupghome: Path) -> Iterator[Path]:
    """``gnupghome`` by a short path, its agent stopped after use: gpg-agent's socket lives
    in the home, and a socket path longer than a sockaddr_un holds (108 bytes) keeps the
    agent from starting (a store deep in a checkout, a test's tmp_path)."""
    with tempfile.TemporaryDirectory(prefix="fleet-gpg-") as tmp:
        link = Path(tmp) / "h"
        link.symlink_to(gnupghome.resolve())
        try:
            yield link
        finally:
            kill_agent(link)


def _gpg(gnupghome: Path, *args: str, input: str | None = None) -> str:
    with short(gnupghome) as home_:
        proc = subprocess.run(["gpg", "--batch", "--quiet", "--homedir", str(home_), *args],
                              capture_output=True, text=True, input=input, timeout=TIMEOUT,
                              check=False)
    if proc.returncode != 0:
        raise SigningError(f"gpg {' '.join(args[:2])} in {gnupghome}: "
                           f"{proc.stderr.strip()[-400:]}")
    return proc.stdout


def fingerprint(root: Path) -> str | None:
    """The signing key's fingerprint, or None when the store has none yet."""
    gnupghome = home(root)
    if not gnupghome.is_dir():
        return None
    out = _gpg(gnupghome, "--with-colons", "--list-keys")
    fprs = [line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:")]
    return fprs[0] if fprs else None


def ensure(root: Path) -> list[str]:
    """Make the key if the store has none; the paths created."""
    gnupghome = home(root)
    created = []
    if not gnupghome.exists():
        gnupghome.mkdir(mode=0o700, parents=True)
        created.append(os.fspath(gnupghome))
    gnupghome.chmod(0o700)
    if fingerprint(root) is None:
        _gpg(gnupghome, "--passphrase", "", "--pinentry-mode", "loopback",
             "--quick-gen-key", UID, "ed25519", "sign", "never")
        created.append(os.fspath(gnupghome / "pubring.kbx"))
    text = pillar_sls(public_key(root))
    pillar = root / PILLAR
    if not pillar.exists() or pillar.read_text() != text:
        pillar.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(pillar, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        created.append(os.fspath(pillar))
    return created


def public_key(root: Path) -> str:
    fpr = fingerprint(root)
    if fpr is None:
        raise SigningError(f"{home(root)}: no signing key (fleet secrets init makes one)")
    return _gpg(home(root), "--armor", "--export", fpr)


def pillar_sls(armored: str) -> str:
    """Pillar ``site_repo:key``, not under ``secrets:``: a public key, which every node gets
    (a node that is given no secret has no ``secrets`` pillar at all)."""
    body = "".join(f"    {line}\n" for line in armored.strip().splitlines())
    return ("#!yaml\n# The site package repository's public key (every node): not secret; "
            "its private half never leaves the store.\n"
            f"site_repo:\n  key: |\n{body}")


def kill_agent(gnupghome: Path) -> None:
    """gpg starts an agent for the key's home; none outlives the command that used it."""
    subprocess.run(["gpgconf", "--homedir", str(gnupghome), "--kill", "gpg-agent"],
                   capture_output=True, timeout=TIMEOUT, check=False)
