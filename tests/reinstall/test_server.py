"""The installer's endpoint over real HTTP: key once, callback sets boot mode local first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fleet.reinstall.server import CallbackServer
from fleet.reinstall.tokens import TokenStore
from reinstall.helpers import RecordingBootMode, http, journal


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[CallbackServer, RecordingBootMode, Path]]:
    boot = RecordingBootMode()
    server = CallbackServer(("127.0.0.1", 0), tmp_path, boot).start()
    node_dir = tmp_path / "tbox-001"
    (node_dir / "keys").mkdir(parents=True)
    (node_dir / "keys" / "minion.pem").write_bytes(b"-----BEGIN RSA PRIVATE KEY-----\nx\n")
    yield server, boot, node_dir
    server.stop()


def test_key_once_then_callback_sets_local(
        served: tuple[CallbackServer, RecordingBootMode, Path]) -> None:
    server, boot, node_dir = served
    token = TokenStore(node_dir).issue(60)
    url = f"{server.url}/v1/key/tbox-001"
    status, body = http("GET", url, token)
    assert status == 200 and body.startswith(b"-----BEGIN RSA PRIVATE KEY")
    assert not (node_dir / "keys" / "minion.pem").exists()  # the only copy is the node's
    status, body = http("GET", url, token)
    assert status == 403 and b"already used" in body
    assert boot.history == []
    status, body = http("POST", f"{server.url}/v1/done/tbox-001", token)
    assert status == 200
    assert boot.history == [("tbox-001", "local")]
    status, body = http("POST", f"{server.url}/v1/done/tbox-001", token)
    assert status == 403 and b"already used" in body
    assert boot.history == [("tbox-001", "local")]
    whats = [e.get("what") for e in journal(node_dir)]
    assert whats == ["key-fetched", "token-refused", "install-finished", "token-refused"]


def test_forged_missing_and_other_node_tokens_refused(
        served: tuple[CallbackServer, RecordingBootMode, Path], tmp_path: Path) -> None:
    server, boot, node_dir = served
    token = TokenStore(node_dir).issue(60)
    other = TokenStore(tmp_path / "tbox-002").issue(60)
    assert http("GET", f"{server.url}/v1/key/tbox-001", "forged")[0] == 403
    assert http("GET", f"{server.url}/v1/key/tbox-001", None)[0] == 403
    assert http("GET", f"{server.url}/v1/key/tbox-001", other)[0] == 403
    assert http("POST", f"{server.url}/v1/done/tbox-001", other)[0] == 403
    assert http("GET", f"{server.url}/v1/key/nonode", token)[0] == 403
    assert http("GET", f"{server.url}/v1/key/..%2f..%2fetc", token)[0] == 404
    assert boot.history == []
    assert (node_dir / "keys" / "minion.pem").exists()
    assert TokenStore(node_dir).usable()  # failed attempts do not spend the real token
