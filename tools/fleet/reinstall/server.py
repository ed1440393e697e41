"""The installer's endpoint on the master (stdlib http.server, in a thread of the reinstall
or on its own: ``python -m fleet.reinstall.server``). Every request carries the node's
one-time token as ``Authorization: Bearer <token>``:

    GET  /v1/key/<node>   the node's new minion private key, once; then deleted here
    POST /v1/done/<node>  the install finished: boot mode back to ``local`` at once, then
                          the token is spent
    GET  /v1/health       ``ok``

Refusals (bad, reused, expired token) are 403 with the reason, and are journaled.
"""

from __future__ import annotations

import argparse
import re
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from fleet.reinstall.bootmode import BootModeSetter
from fleet.reinstall.journal import Journal
from fleet.reinstall.tokens import TokenError, TokenStore

NODE = re.compile(r"^/v1/(key|done)/([a-z0-9][a-z0-9-]{0,62})$")


class CallbackServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, bind: tuple[str, int], state_root: Path, boot: BootModeSetter) -> None:
        super().__init__(bind, _Handler)
        self.state_root = state_root
        self.boot = boot
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


class _Handler(BaseHTTPRequestHandler):
    server: CallbackServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass  # the journal records what matters; no token ever reaches a log

    def _reply(self, code: int, body: bytes, ctype: str = "text/plain") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _target(self, verb: str) -> tuple[str, Path, str] | None:
        m = NODE.match(self.path)
        if m is None or m.group(1) != verb:
            self._reply(404, b"not found\n")
            return None
        node = m.group(2)
        node_dir = self.server.state_root / node
        auth = self.headers.get("Authorization", "")
        token = auth[7:].strip() if auth.startswith("Bearer ") else ""
        if not node_dir.is_dir():
            self._reply(403, b"refused: no reinstall in progress for this node\n")
            return None
        return node, node_dir, token

    def _refuse(self, node: str, node_dir: Path, use: str, exc: TokenError) -> None:
        Journal(node_dir).append("note", what="token-refused", use=use, reason=str(exc),
                                 peer=self.client_address[0])
        self._reply(403, f"refused: {exc}\n".encode())

    def do_GET(self) -> None:
        if self.path == "/v1/health":
            self._reply(200, b"ok\n")
            return
        target = self._target("key")
        if target is None:
            return
        node, node_dir, token = target
        tokens = TokenStore(node_dir)
        key = node_dir / "keys" / "minion.pem"
        try:
            tokens.consume(token, "key_fetched")
        except TokenError as exc:
            self._refuse(node, node_dir, "key", exc)
            return
        try:
            pem = key.read_bytes()
        except FileNotFoundError:
            self._reply(410, b"gone: no key waiting for this node\n")
            return
        key.unlink()  # served once: the only copy is now the node's
        Journal(node_dir).append("note", what="key-fetched", peer=self.client_address[0])
        self._reply(200, pem, "application/x-pem-file")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(min(length, 65536))
        target = self._target("done")
        if target is None:
            return
        node, node_dir, token = target
        tokens = TokenStore(node_dir)
        try:
            tokens.check(token, "done")
        except TokenError as exc:
            self._refuse(node, node_dir, "done", exc)
            return
        try:
            self.server.boot.set_mode(node, "local")  # first: never a second install
        except Exception as exc:
            Journal(node_dir).append("note", what="callback-failed", reason=str(exc))
            self._reply(500, f"could not set boot mode to local: {exc}\n".encode())
            return
        try:
            tokens.consume(token, "done")
        except TokenError as exc:  # a concurrent duplicate won the race
            self._refuse(node, node_dir, "done", exc)
            return
        Journal(node_dir).append("note", what="install-finished", boot_mode="local",
                                 peer=self.client_address[0])
        self._reply(200, b"ok: boot mode is local\n")


def main() -> None:
    """A standalone endpoint serving every node's reinstall from one state dir."""
    from fleet.inventory.load import load_inventory
    from fleet.reinstall.bootmode import PxeBootMode

    ap = argparse.ArgumentParser(prog="python -m fleet.reinstall.server")
    ap.add_argument("-i", "--inventory", type=Path, default=Path("inventory.yaml"))
    ap.add_argument("--state-dir", type=Path, default=Path("/var/lib/fleet/reinstall"))
    ap.add_argument("--pxe-state", type=Path, help="default: the inventory's site.pxe_state")
    ap.add_argument("--pxe-root", type=Path, help="default: the inventory's site.pxe_root")
    ap.add_argument("--bind", default="0.0.0.0:8470")
    args = ap.parse_args()
    host, _, port = args.bind.rpartition(":")
    boot = PxeBootMode(load_inventory(args.inventory), args.pxe_state, args.pxe_root)
    CallbackServer((host, int(port)), args.state_dir, boot).serve_forever()


if __name__ == "__main__":
    main()
