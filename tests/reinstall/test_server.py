"""The installer's endpoint over real HTTP: armed nodes' addresses only, each with its own
quota, decided before a thread; the node's own address only, nothing before its power-on,
the key once, a callback only with a signature by the node's new key, an installer's
error report (with its token) stops the reinstall and revokes the key, and a hostile
client gets bounded, traceback-free refusals."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fleet.inventory.load import load_inventory
from fleet.reinstall.server import (
    JOURNALED_REFUSALS,
    CallbackServer,
    default_bind,
    node_addresses,
)
from fleet.reinstall.tokens import TokenStore
from reinstall.helpers import ROOT, RecordingBootMode, journal, sign_done
from support.bmcfakes import wait_until
from support.httpreq import http
from support.swarm import gen_key_pair

NODE, OTHER = "tbox-001", "tbox-002"
NODE_ADDR, NEIGHBOUR = "127.0.0.2", "127.0.0.3"  # on lo: any 127.x is this host


@dataclass
class Served:
    server: CallbackServer
    boot: RecordingBootMode
    node_dir: Path
    pem: bytes
    revoked: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    def raw(self, data: bytes, source: str = NODE_ADDR) -> bytes:
        """Bytes sent as they are; what the server answers before closing."""
        with socket.create_connection(self.server.server_address[:2], timeout=10,
                                      source_address=(source, 0)) as s:
            s.sendall(data)
            out = b""
            while chunk := s.recv(65536):
                out += chunk
            return out


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    boot = RecordingBootMode()
    revoked: list[str] = []
    server = CallbackServer(("127.0.0.1", 0), tmp_path, boot,
                            {NODE: NODE_ADDR, OTHER: NEIGHBOUR}, revoke_key=revoked.append,
                            per_address=4, timeout=1.0, master_finger="ab:cd").start()
    node_dir = tmp_path / NODE
    (node_dir / "keys").mkdir(parents=True)
    pem, pub = gen_key_pair()
    (node_dir / "keys" / "minion.pem").write_bytes(pem)
    (node_dir / "keys" / "minion.pub").write_bytes(pub)
    yield Served(server, boot, node_dir, pem, revoked)
    server.stop()


def arm(node_dir: Path, powered_on: bool = True) -> str:
    """What the flow leaves: a token issued and, after the power-on, its time recorded."""
    store = TokenStore(node_dir)
    token = store.issue(60)
    if powered_on:
        store.power_on(time.time())
    return token


def test_key_once_then_a_signed_callback_sets_local(served: Served) -> None:
    token = arm(served.node_dir)
    url = f"{served.url}/v1/key/{NODE}"
    finger = f"{served.url}/v1/finger/{NODE}"
    assert http("GET", finger, token, source=NODE_ADDR)[0] == 403  # with the key only
    status, body = http("GET", url, token, source=NODE_ADDR)
    assert status == 200 and body == served.pem
    assert not (served.node_dir / "keys" / "minion.pem").exists()  # the node's only
    # what the installed minion pins (master_finger): this master's key
    assert http("GET", finger, token, source=NODE_ADDR) == (200, b"ab:cd\n")
    assert http("GET", finger, token, source=NEIGHBOUR)[0] == 403
    status, body = http("POST", f"{served.url}/v1/done/{NODE}", token,
                        sign_done(served.pem, NODE, token), source=NODE_ADDR)
    assert status == 200, body
    assert served.boot.history == [(NODE, "local")]
    whats = [e.get("what") for e in journal(served.node_dir) if e.get("use") != "finger"]
    assert whats == ["key-fetched", "install-finished"]


def test_a_repeated_signed_callback_is_answered_ok_and_changes_nothing(
        served: Served) -> None:
    """The installer retries a callback whose answer it lost: the same signed request is
    answered ok once the install finished; unsigned or signed by another key, refused."""
    token = arm(served.node_dir)
    assert http("GET", f"{served.url}/v1/key/{NODE}", token, source=NODE_ADDR)[0] == 200
    done = f"{served.url}/v1/done/{NODE}"
    signed = sign_done(served.pem, NODE, token)
    assert http("POST", done, token, signed, source=NODE_ADDR)[0] == 200
    status, body = http("POST", done, token, signed, source=NODE_ADDR)
    assert status == 200 and b"already finished" in body
    other, _ = gen_key_pair()
    # refused as a used token (409), not answered ok
    assert http("POST", done, token, sign_done(other, NODE, token), source=NODE_ADDR)[0] \
        == 409
    assert http("POST", done, token, source=NODE_ADDR)[0] == 409
    assert served.boot.history == [(NODE, "local")]  # set once


def test_the_endpoint_enforces_the_nodes_address(served: Served) -> None:
    """The right token, from any other address (an armed neighbour, this host), is
    refused and not spent; nginx's rule is not the only guard."""
    token = arm(served.node_dir)
    arm(served.node_dir.parent / OTHER)  # the neighbour is let in: it is armed too
    for source in (NEIGHBOUR, "127.0.0.1"):
        status, body = http("GET", f"{served.url}/v1/key/{NODE}", token, source=source)
        assert status == 403 and b"not from tbox-001's address" in body
        status, _ = http("POST", f"{served.url}/v1/done/{NODE}", token,
                         sign_done(served.pem, NODE, token), source=source)
        assert status == 403
    assert TokenStore(served.node_dir).usable()
    assert (served.node_dir / "keys" / "minion.pem").exists()
    assert served.boot.history == []
    peers = [e["peer"] for e in journal(served.node_dir) if e.get("what") == "token-refused"]
    assert peers[0].startswith(NEIGHBOUR) and peers[2].startswith("127.0.0.1")


def test_no_key_and_no_callback_before_the_power_on(served: Served) -> None:
    """Armed and the token published, but the node not yet powered on for its install:
    what its old OS would send from its own address (the key, a callback signed with the
    key) is refused and spends nothing; after the power-on the installer is served."""
    token = arm(served.node_dir, powered_on=False)
    key, done = f"{served.url}/v1/key/{NODE}", f"{served.url}/v1/done/{NODE}"
    status, body = http("GET", key, token, source=NODE_ADDR)
    assert status == 403 and b"not been powered on for its install" in body
    status, body = http("POST", done, token, sign_done(served.pem, NODE, token),
                        source=NODE_ADDR)
    assert status == 403 and b"not been powered on" in body
    assert http("POST", f"{served.url}/v1/error/{NODE}", token, b"stop it",
                source=NODE_ADDR)[0] == 403  # nor can it stop the reinstall
    assert served.boot.history == [] and served.revoked == []
    assert TokenStore(served.node_dir).usable()
    TokenStore(served.node_dir).power_on(time.time())
    assert http("GET", key, token, source=NODE_ADDR) == (200, served.pem)


def test_a_bare_or_forged_token_cannot_call_back(served: Served) -> None:
    token = arm(served.node_dir)
    done = f"{served.url}/v1/done/{NODE}"
    status, body = http("POST", done, token, source=NODE_ADDR)  # the token alone
    assert status == 403 and b"no proof of the node's new key" in body
    other, _ = gen_key_pair()  # signed, but not with the node's key
    assert http("POST", done, token, sign_done(other, NODE, token), source=NODE_ADDR)[0] \
        == 403
    # signed with the node's key, but over another token (a replay from another run)
    assert http("POST", done, token, sign_done(served.pem, NODE, "old-token"),
                source=NODE_ADDR)[0] == 403
    assert http("POST", done, "forged", sign_done(served.pem, NODE, "forged"),
                source=NODE_ADDR)[0] == 403
    assert served.boot.history == []
    assert TokenStore(served.node_dir).usable()


def test_a_claimed_key_fails_the_real_installer_and_stops_the_reinstall(
        served: Served) -> None:
    """Someone at the node's address fetched the key first: the real installer gets 409
    naming it, reports the error, and the reinstall stops: token spent, boot mode local,
    the key revoked on the master, the claimant in the journal; a later callback by the
    claimant (who holds the key) is refused."""
    token = arm(served.node_dir)
    assert http("GET", f"{served.url}/v1/key/{NODE}", token, source=NODE_ADDR)[0] == 200
    status, body = http("GET", f"{served.url}/v1/key/{NODE}", token, source=NODE_ADDR)
    assert status == 409 and b"already used for key fetched by 127.0.0.2" in body
    status, body = http("POST", f"{served.url}/v1/error/{NODE}", token,
                        b"the master refused the key: claimed", source=NODE_ADDR)
    assert status == 200 and b"key revoked" in body
    assert served.revoked == [NODE]
    assert served.boot.history == [(NODE, "local")]
    state = TokenStore(served.node_dir).status()
    assert state is not None and state["error"]["reason"].startswith("the master refused")
    error = next(e for e in journal(served.node_dir) if e.get("what") == "install-error")
    assert error["claimant"].startswith("127.0.0.2") and error["key_fetched"] is True
    status, _ = http("POST", f"{served.url}/v1/done/{NODE}", token,
                     sign_done(served.pem, NODE, token), source=NODE_ADDR)
    assert status == 409
    # reported once: a second report changes nothing and is not journaled again
    assert http("POST", f"{served.url}/v1/error/{NODE}", token, b"again",
                source=NODE_ADDR)[0] == 200
    assert served.revoked == [NODE]
    assert sum(e.get("what") == "install-error" for e in journal(served.node_dir)) == 1


def test_an_installer_without_a_token_learns_a_reinstall_is_in_progress(
        served: Served, tmp_path: Path) -> None:
    status_url = f"{served.url}/v1/status/{NODE}"
    # OTHER is not armed: its address is turned away at the door (what the installer of
    # a plain install reads as "no reinstall armed")
    status, body = http("GET", f"{served.url}/v1/status/{OTHER}", None, source=NEIGHBOUR)
    assert status == 403 and b"not the address of a node whose reinstall is armed" in body
    token = arm(served.node_dir)
    status, body = http("GET", status_url, None, source=NODE_ADDR)
    assert status == 409 and body.startswith(b"armed")
    http("GET", f"{served.url}/v1/key/{NODE}", token, source=NODE_ADDR)
    status, body = http("GET", status_url, None, source=NODE_ADDR)
    assert status == 409 and body.startswith(b"claimed")
    assert http("GET", status_url, None, source="127.0.0.1")[0] == 403  # not its address


def test_an_error_report_needs_the_nodes_token(served: Served) -> None:
    """No token-less path: from the node's own address, without the token or with a wrong
    one, an error report is refused and stops nothing; with it, it stops the reinstall."""
    token = arm(served.node_dir)
    error = f"{served.url}/v1/error/{NODE}"
    for bearer in (None, "", "forged"):
        status, body = http("POST", error, bearer, b"stop it", source=NODE_ADDR)
        assert status == 403 and b"needs the node's install token" in body, body
    assert served.revoked == [] and served.boot.history == []
    assert TokenStore(served.node_dir).usable()
    assert http("POST", error, token, b"no key", source=NODE_ADDR)[0] == 200
    assert served.revoked == [NODE] and served.boot.history == [(NODE, "local")]


def test_strict_content_length_and_no_tracebacks(
        served: Served, capfd: pytest.CaptureFixture[str]) -> None:
    TokenStore(served.node_dir).issue(60)
    done = f"POST /v1/done/{NODE} HTTP/1.1\r\nHost: x\r\n".encode()
    assert served.raw(done + b"\r\n").startswith(b"HTTP/1.0 411") or \
        served.raw(done + b"\r\n").startswith(b"HTTP/1.1 411")
    assert b" 400 " in served.raw(done + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\n")
    assert b" 400 " in served.raw(done + b"Content-Length: -1\r\n\r\n")
    assert b" 400 " in served.raw(done + b"Content-Length: 1e3\r\n\r\n")
    assert b" 413 " in served.raw(done + b"Content-Length: 999999\r\n\r\n")
    assert b" 400 " in served.raw(done + b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    assert b" 400 " in served.raw(b"GET /v1/health HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc")
    assert served.raw(b"\x00\xff garbage HTTP/1.1\r\n\r\n").split(b" ")[1] in (b"400", b"501")
    assert served.raw(b"GET /v1/key/" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n").split(b" ")[1] \
        in (b"414", b"400")
    # a body shorter than its Content-Length: the connection times out, nothing printed
    assert served.raw(done + b"Content-Length: 100\r\n\r\nshort") == b""
    assert http("GET", f"{served.url}/v1/health", None) == (200, b"ok\n")
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and err == ""
    assert TokenStore(served.node_dir).usable()


def test_a_flood_from_other_addresses_does_not_stop_the_armed_node_being_served(
        served: Served) -> None:
    """64 idle connections from 50 addresses that are no armed node's (twice the 32 that
    used to take every slot): each is answered 403 at once, unread, and holds nothing;
    the armed node fetches its key and calls back while all of them are open."""
    token = arm(served.node_dir)
    addr = served.server.server_address[:2]
    flood = [socket.create_connection(addr, timeout=10,
                                      source_address=(f"127.0.1.{1 + i % 50}", 0))
             for i in range(64)]
    try:
        for s in flood:
            assert s.recv(300).startswith(b"HTTP/1.1 403 Forbidden"), "not turned away"
        status, pem = http("GET", f"{served.url}/v1/key/{NODE}", token, source=NODE_ADDR)
        assert status == 200 and pem == served.pem
        assert http("POST", f"{served.url}/v1/done/{NODE}", token,
                    sign_done(pem, NODE, token), source=NODE_ADDR)[0] == 200
    finally:
        for s in flood:
            s.close()
    # a request sent before the door answers still gets the whole answer (not a reset)
    answer = served.raw(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n", source="127.0.1.99")
    assert answer.startswith(b"HTTP/1.1 403") and answer.endswith(b"is armed\n")


def test_each_armed_address_has_its_own_quota_and_idle_ones_time_out(
        served: Served) -> None:
    """The node's own address can only crowd itself: over its quota (4 here) a quick 503
    (the installer retries it), while another armed node is served; its idle connections
    time out (1 s here) and it is served again."""
    arm(served.node_dir)
    arm(served.node_dir.parent / OTHER)
    addr = served.server.server_address[:2]
    own = [socket.create_connection(addr, timeout=10, source_address=(NODE_ADDR, 0))
           for _ in range(4)]
    try:
        with socket.create_connection(addr, timeout=10, source_address=(NODE_ADDR, 0)) as s:
            s.sendall(b"GET /v1/health HTTP/1.1\r\n\r\n")
            assert s.recv(300).startswith(b"HTTP/1.1 503 Service Unavailable")
        status, body = http("GET", f"{served.url}/v1/status/{OTHER}", None,
                            source=NEIGHBOUR)
        assert status == 409 and body.startswith(b"armed")
        t0 = time.monotonic()
        assert own[0].recv(100) == b""  # the per-connection timeout closed it
        assert time.monotonic() - t0 < 5
    finally:
        for s in own:
            s.close()
    assert wait_until(lambda: http("GET", f"{served.url}/v1/health", None,
                                   source=NODE_ADDR)[0] == 200, timeout=10)


def test_refusals_are_journaled_up_to_a_bound(served: Served) -> None:
    arm(served.node_dir)
    arm(served.node_dir.parent / OTHER)  # the neighbour gets past the door
    for _ in range(JOURNALED_REFUSALS * 3):
        assert http("GET", f"{served.url}/v1/key/{NODE}", "forged", source=NEIGHBOUR)[0] == 403
    lines = journal(served.node_dir)
    assert len(lines) == JOURNALED_REFUSALS
    assert lines[-1]["what"] == "refusals-not-journaled"


def test_the_endpoint_binds_to_the_masters_provisioning_address() -> None:
    inv = load_inventory(ROOT / "inventory.yaml")
    assert default_bind(inv) == (str(inv.master_address), inv.raw.site.salt.reinstall_port)
    assert default_bind(inv)[0] != "0.0.0.0"
    assert node_addresses(inv)["tbox-001"] == str(inv.nodes["tbox-001"].address)
