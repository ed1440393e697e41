"""The nodes' highstates rendered in-process for their apt facts (check-packages, the site
repository's fill, the lab's preinstall): one node per set of roles, through
fleet/saltrender.py (which imports Salt, so it is imported only when a renderer is made)."""

from __future__ import annotations

import base64
import copy
import secrets
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from fleet import backupsftp as sftp
from fleet import secrets as fleet_secrets
from fleet.repo import signing

REPO = Path(__file__).resolve().parents[3]


def write_secrets_root(path: Path) -> str:
    """A secrets pillar root like secrets/pillar/ on the master, with a random dummy key
    (nothing of it is a real secret: a render only reads its text)."""
    key = base64.b64encode(secrets.token_bytes(1024)).decode()
    (path / "secrets").mkdir(parents=True, exist_ok=True)
    (path / "secrets" / "munge.sls").write_text(f"secrets:\n  munge_key: {key}\n")
    (path / "secrets" / "aptcache.sls").write_text(
        fleet_secrets.aptcache_sls(secrets.token_urlsafe(24)))
    # not a key: base.apt only writes the pillar's text (the lab uses a real one)
    (path / "secrets" / "siterepo.sls").write_text(signing.pillar_sls(
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\ntest\n-----END PGP PUBLIC KEY BLOCK-----\n"))
    # a public key: backup.target authorizes the pillar's line
    (path / "secrets" / "backupkey.sls").write_text(sftp.pillar_sls(
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEyDceWfXu3BQy79KBbHKDGK3NaKXWu0LID7p3IMhgry "
        "fleet-backup"))
    path.chmod(0o700)
    return key


def saltrender() -> ModuleType:
    """fleet.saltrender, quiet and with its Jinja cache (it imports Salt: only when asked)."""
    from fleet import saltrender as module

    module.quiet_salt_logging()
    module.enable_jinja_compile_cache()
    return module


@contextmanager
def renderer(root: Path) -> Iterator[Any]:
    """A renderer of ``root``'s salt/ over its pillar/ (with a throw-away secrets root)."""
    module = saltrender()
    with tempfile.TemporaryDirectory() as tmp:
        secrets_root = Path(tmp) / "secrets"
        write_secrets_root(secrets_root)
        yield module.Renderer(root / "salt", root / "pillar", secrets_root,
                              Path(tmp) / "cache")


def role_sets(renderer: Any) -> dict[tuple[str, ...], str]:
    """One node (the first in pillar order) per set of roles."""
    out: dict[tuple[str, ...], str] = {}
    for node in renderer.nodes():
        roles = tuple(sorted(renderer.pillar(node)["node"]["roles"]))
        out.setdefault(roles, node)
    return out


# a pin of a source-built tool: only its packages matter here, never fetched
STAND_IN_PIN = {"source": "http://stand-in.invalid/source.tar", "sha256": "0" * 64}


def with_pinned_sources(renderer: Any, sets: dict[tuple[str, ...], str]
                        ) -> Iterator[tuple[tuple[str, ...], str, dict[str, Any] | None]]:
    """Each role set as (roles, node, None: its own pillar), and again, pinned, a set
    whose node builds tools from pinned sources the inventory leaves null
    (node:nvidia:burnin_tools): their build's packages install only once an operator pins
    one, so they are checked with a STAND-IN pin (roles + "burnin_tools pinned")."""
    for roles, node in sets.items():
        yield roles, node, None
        data = renderer.pillar(node)
        tools = data["node"].get("nvidia", {}).get("burnin_tools") or {}
        if tools and not all(tools.values()):
            pinned = copy.deepcopy(data)
            for name, tool in tools.items():
                pinned["node"]["nvidia"]["burnin_tools"][name] = tool or {
                    **STAND_IN_PIN, "dir": f"/opt/stand-in/{name}", "binary": name}
            yield (*roles, "burnin_tools pinned"), node, pinned


@contextmanager
def pillar_of(renderer: Any, node: str, pillar: dict[str, Any] | None) -> Iterator[None]:
    """``renderer`` rendering ``node`` with ``pillar`` (None: its own) meanwhile."""
    if pillar is None:
        yield
        return
    original = renderer.pillar
    renderer.pillar = lambda name: pillar if name == node else original(name)
    try:
        yield
    finally:
        renderer.pillar = original
