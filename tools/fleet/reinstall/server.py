"""The installer's endpoint on the master (stdlib http.server, in a thread of the reinstall
or on its own: ``fleet endpoint``, fleet.commands.endpoint). A connection is let in by its
address alone before it takes a thread (fleet.reinstall.door): an armed node's address,
or the master's own, each with its own small quota; any other gets a quick 403 unread.
Every request for a node must come from that node's own address in the inventory (the
endpoint checks it itself, whatever nginx does), and the token ones carry the node's
one-time token as ``Authorization: Bearer <token>``; the key and the callback only once
the node was powered on for its install (fleet.reinstall.tokens):

    GET  /v1/key/<node>     the node's new minion private key, once; then deleted here.
                            A second fetch is 409 and names who fetched it.
    POST /v1/done/<node>    the install finished. The body is the proof that the caller
                            holds that key: an RSA signature (PKCS#1 v1.5, SHA-256) with
                            it over ``fleet-install-done:<node>:<token>``, checked with the
                            public key accepted in advance. Boot mode back to ``local``
                            at once, then the token is spent.
    POST /v1/error/<node>   the installer failed (its key or token was used by someone
                            else, a refused callback): body a short reason. The token is
                            spent for every use, the boot mode goes back to ``local`` and
                            the node's pre-accepted key is removed from the master; the
                            reinstall stops with the first claimant's address.
                            With the node's token only, after the power-on.
    GET  /v1/status/<node>  for an installer that found no token: ``none`` (no
                            reinstall: a plain install), else 409 (a token was issued
                            for this install: where it went is an incident)
    GET  /v1/finger/<node>  the master's key fingerprint (``master_finger``), with the
                            token, after the key: the installed minion pins this master
    GET  /v1/health         ``ok``
    POST /v1/discover/<mac> a commissioning report (fleet.discover.inbox), from the
                            address dnsmasq leased to that MAC only; with --discover

Refusals are 403 (409 for a token already used) with the reason, journaled (at most
``JOURNALED_REFUSALS`` per node and endpoint: a flood cannot fill the disk; the door's
refusals are not journaled at all). Each connection has a timeout, the number served at
once is bounded per address, request bodies need an exact ``Content-Length`` within a
small limit, every response closes the connection, and no request can print a traceback.
"""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from fleet.discover.inbox import MAX_BODY as DISCOVER_MAX
from fleet.discover.inbox import PATH as DISCOVER_PATH
from fleet.discover.inbox import Inbox
from fleet.master import layout
from fleet.master.journal import Journal
from fleet.master.runner import Runner
from fleet.master.text import clean
from fleet.pxe.bootmode import BootModeSetter
from fleet.reinstall.door import PER_ADDRESS, Door, Linger
from fleet.reinstall.tokens import TokenError, TokenStore, TokenUsedError

NODE = re.compile(r"^/v1/(key|done|error|status|finger)/([a-z0-9][a-z0-9-]{0,62})$")
DISCOVER = DISCOVER_PATH
MAX_BODY = 4096  # a signature (512 bytes for RSA-4096) or a short reason
CONNECTION_TIMEOUT = 10.0  # seconds a connection may take to send its request
JOURNALED_REFUSALS = 20  # per node, for the endpoint's lifetime
DONE_MESSAGE = "fleet-install-done:{node}:{token}"

KeyRevoker = Callable[[str], None]


def done_message(node: str, token: str) -> bytes:
    """What the installer signs with the node's new key to call back."""
    return DONE_MESSAGE.format(node=node, token=token).encode()


def peer_mac(address: str, arp: Path = Path("/proc/net/arp")) -> str | None:
    """The MAC this host last saw for ``address`` on a directly attached network."""
    try:
        lines = arp.read_text(encoding="ascii", errors="replace").splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        cols = line.split()
        if len(cols) >= 4 and cols[0] == address and cols[3] != "00:00:00:00:00:00":
            return cols[3]
    return None


class CallbackServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the door empties it fast: a flood must not drop a SYN

    def __init__(self, bind: tuple[str, int], state_root: Path, boot: BootModeSetter,
                 addresses: Mapping[str, str], revoke_key: KeyRevoker | None = None,
                 per_address: int = PER_ADDRESS,
                 timeout: float = CONNECTION_TIMEOUT,
                 master_finger: str | None = None, inbox: Inbox | None = None) -> None:
        super().__init__(bind, _Handler)
        self.inbox = inbox
        self.door = Door(dict(addresses), self.armed, own={str(self.server_address[0])},
                         per_address=per_address,
                         also=inbox.admits if inbox is not None else None)
        self.linger = Linger()
        self.state_root = state_root
        self.boot = boot
        self.addresses = dict(addresses)  # node -> the only address it is served to
        self.revoke_key = revoke_key
        self.master_finger = master_finger  # of the master's own public key
        self.connection_timeout = timeout
        self._refusals: dict[str, int] = {}
        self._refusals_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> CallbackServer:
        self._thread = threading.Thread(target=self._serve, name="fleet-callback",
                                        daemon=True)
        self._thread.start()
        return self

    def _serve(self) -> None:
        # SIGINT and SIGTERM go to the main thread only (this thread's request threads
        # inherit the mask): a signal the kernel delivered here would reach the flow only
        # when its main thread next woke up by itself
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        self.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        """Stops serving (within serve_forever's poll interval) and closes the socket;
        never waits on a thread that does not serve, nor for requests in flight."""
        if self._thread is not None and self._thread.is_alive():
            self.shutdown()
            self._thread.join(timeout=5)
        self.server_close()
        self.linger.stop()

    # --- the door: by address, before a thread; no tracebacks ---------------------

    def armed(self, node: str) -> bool:
        """The node's reinstall is armed: a token issued, not revoked, closed, expired."""
        node_dir = layout.node_dir(self.state_root, node)
        return node_dir.is_dir() and TokenStore(node_dir).in_progress()

    def process_request(self, request: Any, client_address: Any) -> None:
        peer = str(client_address[0])
        refusal = self.door.admit(peer)
        if refusal is not None:
            self.linger.turn_away(request, refusal)  # answered at once, unread
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.door.leave(peer)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.door.leave(str(client_address[0]))

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a broken or hostile connection: nothing to print, nothing to keep

    def journal_refusal(self, node: str, node_dir: Path, **fields: Any) -> None:
        """A refused request, journaled at most JOURNALED_REFUSALS times per node."""
        with self._refusals_lock:
            n = self._refusals.get(node, 0) + 1
            self._refusals[node] = n
        if n < JOURNALED_REFUSALS:
            Journal(node_dir).append("note", what="token-refused", **fields)
        elif n == JOURNALED_REFUSALS:
            Journal(node_dir).append("note", what="refusals-not-journaled",
                                     reason=f"{n} refused requests: further ones are "
                                            "answered but not journaled",
                                     last_peer=fields.get("peer"))


class _Handler(BaseHTTPRequestHandler):
    server: CallbackServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        # StreamRequestHandler.setup sets it on the socket: each read and write of the
        # connection (request line, headers, body) must progress within it
        self.request.settimeout(self.server.connection_timeout)
        # and the whole connection within three times that (a client trickling a byte
        # at a time keeps no thread): the socket is shut down under it
        self._deadline = threading.Timer(3 * self.server.connection_timeout, self._cut)
        self._deadline.daemon = True
        self._deadline.start()
        super().setup()

    def _cut(self) -> None:
        with contextlib.suppress(OSError):
            self.request.shutdown(socket.SHUT_RDWR)

    def finish(self) -> None:
        self._deadline.cancel()
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: object) -> None:
        pass  # the journal records what matters; no token ever reaches a log

    def _reply(self, code: int, body: bytes, ctype: str = "text/plain") -> None:
        self.close_connection = True  # one request per connection: nothing idles
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    @property
    def peer(self) -> str:
        return str(self.client_address[0])

    def _peer_name(self) -> str:
        mac = peer_mac(self.peer)
        return f"{self.peer} (MAC {mac})" if mac else self.peer

    def _body(self, allowed: bool, limit: int = MAX_BODY) -> bytes | None:
        """The request body under strict Content-Length rules, or None after a refusal."""
        if self.headers.get_all("Transfer-Encoding"):
            self._reply(400, b"bad request: Transfer-Encoding is not accepted\n")
            return None
        lengths = self.headers.get_all("Content-Length") or []
        if not allowed:
            if any(v.strip() != "0" for v in lengths):
                self._reply(400, b"bad request: no body expected\n")
                return None
            return b""
        if not lengths:
            self._reply(411, b"length required\n")
            return None
        if len(lengths) != 1 or not re.fullmatch(r"[0-9]{1,6}", lengths[0].strip()):
            self._reply(400, b"bad request: Content-Length\n")
            return None
        n = int(lengths[0])
        if n > limit:
            self._reply(413, b"request body too large\n")
            return None
        body = self.rfile.read(n) if n else b""
        if len(body) != n:
            self.close_connection = True
            return None  # the client went away (or timed out) mid-body
        return body

    def _dispatch(self, method: str) -> None:
        try:
            self._route(method)
        except (TimeoutError, ConnectionError):
            self.close_connection = True
        except Exception:  # never a traceback to the peer or to stderr
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._reply(500, b"internal error\n")

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _route(self, method: str) -> None:
        if self.path == "/v1/health" and method == "GET":
            if self._body(False) is not None:
                self._reply(200, b"ok\n")
            return
        if self.path.startswith("/v1/discover/") and self.server.inbox is not None:
            self._discover(method)
            return
        m = NODE.match(self.path)
        verb = m.group(1) if m else ""
        want = "POST" if verb in ("done", "error") else "GET"
        if m is None or method != want:
            self._reply(404, b"not found\n")
            return
        body = self._body(method == "POST")
        if body is None:
            return
        node = m.group(2)
        allowed = self.server.addresses.get(node)
        node_dir = layout.node_dir(self.server.state_root, node)
        if allowed is None:
            self._reply(403, b"refused: unknown node\n")
            return
        if self.peer != allowed:
            if node_dir.is_dir():
                self.server.journal_refusal(node, node_dir, use=verb, peer=self._peer_name(),
                                            reason=f"not from {node}'s address {allowed}")
            self._reply(403, f"refused: not from {node}'s address\n".encode())
            return
        if not node_dir.is_dir():
            if verb == "status":
                self._reply(200, b"none: no reinstall in progress for this node\n")
            else:
                self._reply(403, b"refused: no reinstall in progress for this node\n")
            return
        auth = self.headers.get("Authorization", "")
        token = auth[7:].strip() if auth.startswith("Bearer ") else ""
        {"key": self._key, "done": self._done, "error": self._error,
         "status": self._status, "finger": self._finger}[verb](node, node_dir, token, body)

    def _discover(self, method: str) -> None:
        inbox = self.server.inbox
        m = DISCOVER.match(self.path)
        if m is None or method != "POST" or inbox is None:
            self._reply(404, b"not found\n")
            return
        body = self._body(True, DISCOVER_MAX)
        if body is not None:
            code, text = inbox.receive(m.group(1), self.peer, body)
            self._reply(code, (text + "\n").encode())

    def _refuse(self, node: str, node_dir: Path, use: str, exc: TokenError,
                token: str) -> None:
        self.server.journal_refusal(node, node_dir, use=use, reason=str(exc),
                                    peer=self._peer_name())
        # the right token used already: someone else claimed it (409), else 403
        code = 409 if isinstance(exc, TokenUsedError) else 403
        self._reply(code, f"refused: {exc}\n".encode())

    def _key(self, node: str, node_dir: Path, token: str, body: bytes) -> None:
        tokens = TokenStore(node_dir)
        key = layout.private_key(node_dir)
        try:
            tokens.consume(token, "key_fetched", peer=self._peer_name())
        except TokenError as exc:
            self._refuse(node, node_dir, "key", exc, token)
            return
        try:
            pem = key.read_bytes()
        except FileNotFoundError:
            self._reply(410, b"gone: no key waiting for this node\n")
            return
        key.unlink()  # served once: the only copy is now the node's
        Journal(node_dir).append("note", what="key-fetched", peer=self._peer_name())
        self._reply(200, pem, "application/x-pem-file")

    def _done(self, node: str, node_dir: Path, token: str, body: bytes) -> None:
        tokens = TokenStore(node_dir)
        if tokens.finished_with(token) and _signed_by_node(
                node_dir, done_message(node, token), body):
            # the installer retries a callback whose answer it never got: the same
            # signed request again changes nothing (the boot mode is already local)
            self._reply(200, b"ok: already finished, boot mode is local\n")
            return
        try:
            tokens.check(token, "done")
            if not _signed_by_node(node_dir, done_message(node, token), body):
                raise TokenError("no proof of the node's new key (the callback must be "
                                 "signed with it)")
        except TokenError as exc:
            self._refuse(node, node_dir, "done", exc, token)
            return
        try:
            self.server.boot.set_mode(node, "local")  # first: never a second install
        except Exception as exc:
            Journal(node_dir).append("note", what="callback-failed",
                                     reason=clean(str(exc), 300))
            self._reply(500, b"could not set boot mode to local\n")
            return
        try:
            tokens.consume(token, "done")
        except TokenError as exc:  # a concurrent duplicate won the race
            self._refuse(node, node_dir, "done", exc, token)
            return
        Journal(node_dir).append("note", what="install-finished", boot_mode="local",
                                 peer=self._peer_name())
        self._reply(200, b"ok: boot mode is local\n")

    def _error(self, node: str, node_dir: Path, token: str, body: bytes) -> None:
        tokens = TokenStore(node_dir)
        data = tokens.status() or {}
        if not (token and tokens.matches(token)):
            self._refuse(node, node_dir, "error", TokenError(
                "an error report needs the node's install token"), token)
            return
        if not data.get("powered_on"):
            self._refuse(node, node_dir, "error", TokenError(
                "the node has not been powered on for its install yet"), token)
            return
        reason = clean(body.decode("utf-8", errors="replace").strip() or "no reason", 300)
        before = tokens.fail(reason, self._peer_name())
        if before is None or before.get("error"):
            self._reply(200, b"reported already: the reinstall stops\n")
            return  # journaled once: the first report
        claimant = before.get("key_peer")
        Journal(node_dir).append("note", what="install-error", reason=reason,
                                 peer=self._peer_name(), claimant=claimant,
                                 key_fetched=bool(before.get("key_fetched")),
                                 done=bool(before.get("done")))
        left = []
        try:
            self.server.boot.set_mode(node, "local")
            left.append("boot mode local")
        except Exception as exc:
            left.append(f"boot mode UNKNOWN ({clean(str(exc), 120)})")
        layout.private_key(node_dir).unlink(missing_ok=True)
        if self.server.revoke_key is not None:
            try:
                self.server.revoke_key(node)
                left.append("key revoked on the master")
            except Exception as exc:
                left.append(f"key NOT revoked ({clean(str(exc), 120)})")
        Journal(node_dir).append("note", what="key-revoked" if "key revoked on the master"
                                 in left else "revoke-failed", left="; ".join(left))
        self._reply(200, ("reported: the reinstall stops; " + "; ".join(left) + "\n").encode())

    def _finger(self, node: str, node_dir: Path, token: str, body: bytes) -> None:
        """After the key fetch of this token (the same installer): what to pin."""
        tokens = TokenStore(node_dir)
        data = tokens.status() or {}
        if not (token and tokens.matches(token) and data.get("key_fetched")
                and not data.get("error") and not data.get("revoked")):
            self._refuse(node, node_dir, "finger",
                         TokenError("the master's finger goes with the node's key only"), "")
            return
        if not self.server.master_finger:
            self._reply(404, b"not found: no master key on the endpoint's side\n")
            return
        self._reply(200, (self.server.master_finger + "\n").encode())

    def _status(self, node: str, node_dir: Path, token: str, body: bytes) -> None:
        tokens = TokenStore(node_dir)
        data = tokens.status() or {}
        if not tokens.in_progress():
            self._reply(200, b"none: no reinstall in progress for this node\n")
            return
        if data.get("key_fetched") or data.get("done") or data.get("error"):
            what = "its key was already fetched" if data.get("key_fetched") else \
                "it was already used"
            self._reply(409, f"claimed: a reinstall is in progress and {what}\n".encode())
            return
        self._reply(409, b"armed: a token was published for this install but the "
                         b"installer did not get it\n")


def _signed_by_node(node_dir: Path, message: bytes, signature: bytes) -> bool:
    """``signature`` is the node's new key's over ``message`` (the public half kept at
    rotate_key, the one the master accepted in advance)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    if not signature:
        return False
    try:
        public = serialization.load_pem_public_key(
            layout.public_key(node_dir).read_bytes())
    except (OSError, ValueError):
        return False
    if not isinstance(public, rsa.RSAPublicKey):
        return False
    try:
        public.verify(signature, message, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return False
    return True


def default_bind(inv: Any) -> tuple[str, int]:
    """The master's provisioning address and ``site.salt.reinstall_port``: where the
    rendered late-commands call, and nowhere else."""
    return str(inv.master_address), int(inv.raw.site.salt.reinstall_port)


def node_addresses(inv: Any) -> dict[str, str]:
    """Each node's provisioning address, the only one its requests may come from."""
    return {n.hostname: str(n.address) for n in inv.nodes.values()}


def salt_key_revoker(runner: Runner) -> KeyRevoker:
    """Removes a node's accepted key through ``runner``'s salt-key (the verb's own: the
    context's, from its --salt-config)."""
    from fleet.master.keys import delete_key

    def revoke(node: str) -> None:
        delete_key(runner, node)

    return revoke

