"""Helpers for the reinstall tests: a throw-away Salt master config for the real salt-key,
and a recording boot-mode store standing in for fleet.pxe.state (not in this tree yet)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fleet.reinstall.bootmode import BootMode

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def salt_key_bin() -> str:
    found = shutil.which("salt-key") or (VENV_BIN / "salt-key")
    if not Path(found).exists():
        pytest.skip("salt-key is not installed (it comes with salt from requirements.txt; "
                    "run `make deps`)")
    return str(found)


def salt_master_config(tmp: Path) -> tuple[Path, Path]:
    """A master config dir whose pki_dir is under ``tmp``; returns (config dir, pki dir)."""
    root = tmp / "salt"
    conf, pki = root / "etc", root / "pki"
    for d in (conf, pki / "minions", pki / "minions_pre", pki / "minions_rejected",
              pki / "minions_denied", root / "cache", root / "sock"):
        d.mkdir(parents=True, exist_ok=True)
    (conf / "master").write_text(
        f"root_dir: {root}\npki_dir: {pki}\ncachedir: {root / 'cache'}\n"
        f"sock_dir: {root / 'sock'}\nlog_file: {root / 'master.log'}\n"
        "user: root\n", encoding="utf-8")
    return conf, pki


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


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def run_fleet(*args: str) -> Run:
    """`python -m fleet ARGS` as a separate process, as an operator runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    proc = subprocess.run([sys.executable, "-m", "fleet", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def http(method: str, url: str, token: str | None, body: bytes | None = None,
         source: str | None = None) -> tuple[int, bytes]:
    """One request; ``source``: the local address to send it from (any 127.x works)."""
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname or "", u.port, timeout=5,
                                      source_address=(source, 0) if source else None)
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    if method == "POST" and body is None:
        body = b""
    try:
        conn.request(method, u.path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


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
