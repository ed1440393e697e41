"""One-time install tokens. Only a SHA-256 of the token is stored (``token.json``, 0600);
the token itself goes to the installer and nowhere else. One token allows one key fetch
and one install-finished callback, until it expires; then it is spent.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class TokenError(Exception):
    """Why a presented token is refused (forged, expired, reused, revoked)."""


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenStore:
    def __init__(self, node_dir: Path) -> None:
        self.path = node_dir / "token.json"
        self._lock = node_dir / "token.lock"

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self._lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _read(self) -> dict[str, Any] | None:
        try:
            data: dict[str, Any] = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return data

    def _write(self, data: dict[str, Any]) -> None:
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(self.path)

    def issue(self, ttl: float) -> str:
        """A new token (replacing any earlier one) valid for ``ttl`` seconds."""
        token = secrets.token_urlsafe(32)
        now = time.time()
        with self._locked():
            self._write({"sha256": _hash(token), "issued": now, "expires": now + ttl,
                         "key_fetched": None, "done": None, "revoked": None})
        return token

    def status(self) -> dict[str, Any] | None:
        with self._locked():
            return self._read()

    def usable(self) -> bool:
        """The installer could still use it: issued, not expired, revoked, or used up."""
        data = self.status()
        return bool(data and not data["revoked"] and not data["done"]
                    and not data["key_fetched"] and time.time() < data["expires"])

    def check(self, token: str, use: str) -> None:
        """Refuse ``token`` for ``use`` (``key_fetched`` or ``done``) unless valid and unused
        for that use. Does not consume it (see ``consume``)."""
        with self._locked():
            self._check(self._read(), token, use)

    def consume(self, token: str, use: str) -> None:
        with self._locked():
            data = self._read()
            self._check(data, token, use)
            assert data is not None
            data[use] = time.time()
            self._write(data)

    def revoke(self) -> bool:
        with self._locked():
            data = self._read()
            if data is None or data["revoked"] or data["done"]:
                return False
            data["revoked"] = time.time()
            self._write(data)
            return True

    @staticmethod
    def _check(data: dict[str, Any] | None, token: str, use: str) -> None:
        if data is None:
            raise TokenError("no install token was issued for this node")
        if not hmac.compare_digest(_hash(token), data["sha256"]):
            raise TokenError("wrong token")
        if data["revoked"]:
            raise TokenError("token revoked (the reinstall was aborted or restarted)")
        if data["done"]:
            raise TokenError("token already used (the install already called back)")
        if data.get(use):
            raise TokenError(f"token already used for {use.replace('_', ' ')}")
        if time.time() >= data["expires"]:
            raise TokenError("token expired")
