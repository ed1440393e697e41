"""A TCP relay in front of a test's server that can be made slow on demand: a BMC that
takes its time to answer, as real ones do. A fake of the network, not of the server."""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType


class SlowLink:
    """Listens on 127.0.0.1:``port`` and relays every connection to 127.0.0.1:``target``.
    While ``delay`` is above zero, each chunk a client sends waits that long first."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.delay = 0.0
        self._stopped = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._pipe, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, False), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, upstream: bool) -> None:
        try:
            while chunk := src.recv(65536):
                if upstream and self.delay > 0:
                    self._stopped.wait(self.delay)
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_RDWR)
            src.close()

    def close(self) -> None:
        self._stopped.set()
        self._listener.close()
        self._thread.join(timeout=2)

    def __enter__(self) -> SlowLink:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
