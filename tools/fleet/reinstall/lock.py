"""One reinstall per node at a time: an exclusive flock on ``<state>/<node>/lock``, held for
the life of the process (the kernel drops it if the process dies)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from fleet.reinstall import layout


class BusyError(Exception):
    pass


class NodeLock:
    def __init__(self, node_dir: Path) -> None:
        self.path = layout.lock(node_dir)
        self._fd: int | None = None

    def __enter__(self) -> NodeLock:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise BusyError(f"another `fleet reinstall` (pid {holder}) is running for "
                            f"{self.path.parent.name} (lock {self.path})") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the flock
            self._fd = None
