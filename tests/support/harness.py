"""Shared pieces of the Salt render check (used by conftest.py, the tests and update_snapshots.py).

Salt itself is imported only when a renderer is made, so this imports without Salt.
"""

from __future__ import annotations

import base64
import secrets
from pathlib import Path
from typing import Any

from fleet import secrets as fleet_secrets
from fleet.repo import signing

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = ROOT / "tests" / "salt" / "snapshots"
# the OS every node is rendered for, and the others rendered for one node per role
DEFAULT_OS = "ubuntu-24.04"
OTHER_OS = ("ubuntu-22.04", "debian-12")


def write_secrets_root(path: Path) -> str:
    """A secrets pillar root like secrets/pillar/ on the master, with a random dummy key."""
    key = base64.b64encode(secrets.token_bytes(1024)).decode()
    (path / "secrets").mkdir(parents=True, exist_ok=True)
    (path / "secrets" / "munge.sls").write_text(f"secrets:\n  munge_key: {key}\n")
    (path / "secrets" / "aptcache.sls").write_text(
        fleet_secrets.aptcache_sls(secrets.token_urlsafe(24)))
    # not a key: base.apt only writes the pillar's text (the lab uses a real one)
    (path / "secrets" / "siterepo.sls").write_text(signing.pillar_sls(
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\ntest\n-----END PGP PUBLIC KEY BLOCK-----\n"))
    path.chmod(0o700)
    return key


def make_renderer(tmp: Path, file_root: Path | None = None) -> tuple[Any, str]:
    """A saltrender.Renderer over salt/ (or `file_root`), pillar/ and a dummy secrets root."""
    from support import saltrender  # imports Salt: only where Salt is installed

    saltrender.quiet_salt_logging()
    saltrender.enable_jinja_compile_cache()
    secret_root = tmp / "secrets-pillar"
    key = write_secrets_root(secret_root)
    renderer = saltrender.Renderer(file_root or ROOT / "salt", ROOT / "pillar", secret_root,
                                   tmp / "cache")
    return renderer, key


def roles_of(renderer: Any) -> dict[str, list[str]]:
    """role -> nodes that have it, in pillar order."""
    out: dict[str, list[str]] = {}
    for node in renderer.nodes():
        for role in renderer.pillar(node)["node"]["roles"]:
            out.setdefault(role, []).append(node)
    return out
