"""Helpers for the reinstall tests: a recording boot-mode store standing in for
fleet.pxe.state, the installer's signed callback, the journal read back."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from fleet.pxe.bootmode import BootMode

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class RecordingBootMode:
    """Keeps each node's boot mode and every change (the flow's BootModeSetter)."""

    modes: dict[str, str] = field(default_factory=dict)
    history: list[tuple[str, str]] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict)  # published for the installer

    def set_mode(self, node: str, mode: BootMode, token: str | None = None) -> None:
        self.modes[node] = mode
        self.history.append((node, mode))
        if token is not None:
            self.tokens[node] = token
        if mode == "local":
            self.tokens.pop(node, None)


def sign_done(pem: bytes, node: str, token: str) -> bytes:
    """What the installer's callback sends: the node's key's signature (openssl dgst
    -sha256 -sign) over the done message."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    from fleet.reinstall.server import done_message

    key = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    return key.sign(done_message(node, token), padding.PKCS1v15(), hashes.SHA256())


def journal(node_dir: Path) -> list[dict[str, object]]:
    return [json.loads(ln) for ln in (node_dir / "journal.jsonl").read_text().splitlines()]
