"""One-time install tokens: hashed at rest, single use, expiring, revocable."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from fleet.reinstall.tokens import TokenError, TokenStore


def test_token_is_stored_hashed_and_private(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "n1")
    token = store.issue(60)
    text = store.path.read_text()
    assert token not in text
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert len(token) >= 40 and store.usable()


def test_each_use_once(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "n1")
    token = store.issue(60)
    store.power_on(time.time())
    with pytest.raises(TokenError, match="wrong token"):
        store.consume(token[:-1] + ("A" if token[-1] != "A" else "B"), "key_fetched")
    store.consume(token, "key_fetched")
    assert not store.usable()
    with pytest.raises(TokenError, match="already used for key fetched"):
        store.consume(token, "key_fetched")
    store.consume(token, "done")
    with pytest.raises(TokenError, match="already used"):
        store.check(token, "done")


def test_expiry(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "n1")
    token = store.issue(0.2)
    time.sleep(0.3)
    assert not store.usable()
    with pytest.raises(TokenError, match="expired"):
        store.check(token, "key_fetched")


def test_revoke_and_reissue(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "n1")
    old = store.issue(60)
    assert store.revoke()
    with pytest.raises(TokenError, match="revoked"):
        store.check(old, "done")
    new = store.issue(60)
    with pytest.raises(TokenError, match="wrong token"):
        store.check(old, "key_fetched")
    store.power_on(time.time())
    store.check(new, "key_fetched")


def test_no_use_before_the_power_on(tmp_path: Path) -> None:
    """Issued and published, but the node not yet powered on for its install (its old OS
    may be what asks): neither the key nor the callback, and the token is not spent; a
    new power-off takes the power-on back."""
    store = TokenStore(tmp_path / "n1")
    token = store.issue(60)
    for use in ("key_fetched", "done"):
        with pytest.raises(TokenError, match="not been powered on for its install"):
            store.consume(token, use)
    assert store.usable()
    store.power_on(time.time())
    store.check(token, "key_fetched")
    store.power_on(None)  # powered off again (a resume)
    with pytest.raises(TokenError, match="not been powered on"):
        store.check(token, "key_fetched")
    store.power_on(time.time())
    store.consume(token, "key_fetched")
    assert store.status()["powered_on"] is not None  # type: ignore[index]
