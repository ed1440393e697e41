"""Who the installer's endpoint lets in, decided from the caller's address alone before a
request takes a thread (fleet.reinstall.server's ``process_request``):

- an armed node's address (a node of the endpoint whose token is issued and neither
  spent by a callback nor revoked, closed or expired) or the endpoint's own host (the
  master: its health probe) is admitted, at most ``PER_ADDRESS`` connections at once
  from each: no other host can take an armed node's place, and a node's own address
  can only crowd itself;
- any other address gets a quick ``403`` at once, and an admitted address over its
  quota a quick ``503`` (the installer retries it): written by the accepting thread
  without reading the request, the connection half-closed and drained by ``Linger`` so
  that the answer arrives (a close with the request unread would reset it instead).

Nothing is journaled here: a flood must not reach the disk.
"""

from __future__ import annotations

import collections
import contextlib
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterable

PER_ADDRESS = 4  # connections served at once per admitted address
LINGER_S = 2.0  # how long a turned-away connection is drained before it is closed
LINGER_MAX = 512  # turned-away connections drained at once; beyond, the oldest is closed

Armed = Callable[[str], bool]  # node -> its reinstall is armed


def answer(code: int, reason: str, text: str) -> bytes:
    body = text.encode()
    return (f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\n"
            "Connection: close\r\n\r\n").encode() + body


NOT_ARMED = answer(403, "Forbidden", "refused: not the address of a node whose reinstall "
                                     "is armed\n")
BUSY = answer(503, "Service Unavailable", "busy: too many connections from this address; "
                                          "retry\n")


class Door:
    """Admission by address: ``admit(peer)`` is None (admitted: ``leave(peer)`` when the
    connection ends) or the answer that turns it away."""

    def __init__(self, addresses: dict[str, str], armed: Armed, own: Iterable[str],
                 per_address: int = PER_ADDRESS,
                 also: Callable[[str], bool] | None = None) -> None:
        self._also = also  # another way in (fleet.discover.inbox: a leased address)
        self._nodes: dict[str, list[str]] = collections.defaultdict(list)
        for node, address in addresses.items():
            self._nodes[address].append(node)
        self._own = set(own)
        self._armed = armed
        self.per_address = per_address
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def admit(self, peer: str) -> bytes | None:
        nodes = self._nodes.get(peer)
        if peer not in self._own and not (nodes and any(self._armed(n) for n in nodes)) \
                and not (self._also is not None and self._also(peer)):
            return NOT_ARMED
        with self._lock:
            n = self._open.get(peer, 0)
            if n >= self.per_address:
                return BUSY
            self._open[peer] = n + 1
        return None

    def leave(self, peer: str) -> None:
        with self._lock:
            n = self._open.get(peer, 0) - 1
            if n > 0:
                self._open[peer] = n
            else:
                self._open.pop(peer, None)


class Linger:
    """Turned-away connections: answered, half-closed, then read and discarded until the
    peer closes or ``LINGER_S`` passes, in one thread for all of them."""

    def __init__(self, seconds: float = LINGER_S, most: int = LINGER_MAX) -> None:
        self.seconds, self.most = seconds, most
        self._sel = selectors.DefaultSelector()
        self._waiting: collections.OrderedDict[socket.socket, float] = \
            collections.OrderedDict()
        self._new: list[socket.socket] = []
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ)
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="fleet-door-linger",
                                        daemon=True)
        self._thread.start()

    def turn_away(self, sock: socket.socket, reply: bytes) -> None:
        """Answer ``reply`` (small: it fits the send buffer) and let the peer read it."""
        try:
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError, InterruptedError):
                sock.recv(65536)  # what already came: unread, it would reset the answer
            sock.send(reply)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        with self._lock:
            self._new.append(sock)
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def stop(self) -> None:
        self._stopped = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._thread.join(timeout=5)

    def _run(self) -> None:
        import signal

        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            while not self._stopped:
                self._take_new()
                for key, _ in self._sel.select(timeout=0.2):
                    if key.fileobj is self._wake_r:
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(4096)
                    else:
                        self._drain(key.fileobj)  # type: ignore[arg-type]
                now = time.monotonic()
                while self._waiting and next(iter(self._waiting.values())) <= now:
                    self._close(next(iter(self._waiting)))
        finally:
            for sock in [*self._waiting, *self._new]:
                self._close(sock)
            self._sel.close()
            self._wake_r.close()
            self._wake_w.close()

    def _take_new(self) -> None:
        with self._lock:
            new, self._new = self._new, []
        for sock in new:
            while len(self._waiting) >= self.most:
                self._close(next(iter(self._waiting)))
            self._waiting[sock] = time.monotonic() + self.seconds
            self._sel.register(sock, selectors.EVENT_READ)

    def _drain(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(sock)

    def _close(self, sock: socket.socket) -> None:
        if self._waiting.pop(sock, None) is not None:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self._sel.unregister(sock)
        sock.close()
