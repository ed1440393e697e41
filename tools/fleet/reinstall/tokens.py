"""One-time install tokens. Only a SHA-256 of the token is stored (``token.json``, 0600);
the token itself goes to the installer and nowhere else. One token allows one key fetch
and one install-finished callback, until it expires; then it is spent.

Neither use is allowed before the node was powered on for its install (``powered_on``,
recorded by the flow's power_on step after the BMC confirmed it off and accepted the
power-on): until then the node's old OS may have been running on the node's address, and
nothing it sends counts. A new power-off (``power_on(None)``) clears it again.
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

from fleet.master import layout


class TokenError(Exception):
    """Why a presented token is refused (forged, expired, reused, revoked)."""


class TokenUsedError(TokenError):
    """The right token, already used (or spent by an error report): someone claimed it."""


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenStore:
    def __init__(self, node_dir: Path) -> None:
        self.path = layout.token_record(node_dir)
        self._lock = layout.token_lock(node_dir)

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
                         "key_fetched": None, "key_peer": None, "done": None,
                         "revoked": None, "error": None, "powered_on": None})
        return token

    def power_on(self, at: float | None) -> None:
        """The node was powered on for its install at ``at`` (None: it is being powered
        off again, and nothing from it counts until the next power-on)."""
        with self._locked():
            data = self._read()
            if data is None:
                raise TokenError("no install token was issued for this node")
            data["powered_on"] = at
            self._write(data)

    def status(self) -> dict[str, Any] | None:
        with self._locked():
            return self._read()

    def usable(self) -> bool:
        """The installer could still use it: issued, not expired, revoked, or used up."""
        data = self.status()
        return bool(data and not data["revoked"] and not data["done"]
                    and not data["key_fetched"] and not data.get("error")
                    and time.time() < data["expires"])

    def matches(self, token: str) -> bool:
        """``token`` is this node's latest token (whatever its state)."""
        with self._locked():
            data = self._read()
        return data is not None and hmac.compare_digest(_hash(token), data["sha256"])

    def in_progress(self) -> bool:
        """A token was issued and has not expired or been revoked: a reinstall is under
        way (or its installer already used the token)."""
        data = self.status()
        return bool(data and not data["revoked"] and not data.get("closed")
                    and time.time() < data["expires"])

    def close(self) -> None:
        """The reinstall completed: a later install of the node is a new story."""
        with self._locked():
            data = self._read()
            if data is not None and not data.get("closed"):
                data["closed"] = time.time()
                self._write(data)

    def finished_with(self, token: str) -> bool:
        """``token`` is this run's and its install already called back (nothing since
        revoked it or reported an error): a repeated callback, its answer lost."""
        with self._locked():
            data = self._read()
        return bool(data and hmac.compare_digest(_hash(token), data["sha256"])
                    and data["done"] and not data["revoked"] and not data.get("error"))

    def check(self, token: str, use: str) -> None:
        """Refuse ``token`` for ``use`` (``key_fetched`` or ``done``) unless valid and unused
        for that use. Does not consume it (see ``consume``)."""
        with self._locked():
            self._check(self._read(), token, use)

    def consume(self, token: str, use: str, peer: str | None = None) -> None:
        with self._locked():
            data = self._read()
            self._check(data, token, use)
            assert data is not None
            data[use] = time.time()
            if use == "key_fetched":
                data["key_peer"] = peer
            self._write(data)

    def fail(self, reason: str, peer: str) -> dict[str, Any] | None:
        """The installer reported an error (the key or token already used, a refused
        callback...): the token is spent for every use, and the first report is kept
        (``error``: reason, peer, time). Returns the token's state before, or None when
        no token was issued."""
        with self._locked():
            data = self._read()
            if data is None:
                return None
            before = dict(data)
            if not data.get("error"):
                data["error"] = {"reason": reason, "peer": peer, "at": time.time()}
                self._write(data)
            return before

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
        if data.get("error"):
            raise TokenUsedError("token spent: the installer reported an error")
        if data["done"]:
            raise TokenUsedError("token already used (the install already called back)")
        if data.get(use):
            by = f" by {data['key_peer']}" if use == "key_fetched" and data.get("key_peer") \
                else ""
            raise TokenUsedError(f"token already used for {use.replace('_', ' ')}{by}")
        if time.time() >= data["expires"]:
            raise TokenError("token expired")
        if not data.get("powered_on"):
            raise TokenError("the node has not been powered on for its install yet: "
                             "nothing from its address counts before that (its old OS "
                             "may be running there)")
