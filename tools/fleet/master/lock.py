"""One flow per node at a time: an exclusive flock on ``<state>/<node>/lock``, held for the
life of the process (the kernel drops it if the process dies). ``fleet reinstall`` takes it
for its node, and ``fleet rollout`` for each node it works on, so the two never act on one
node at once; the file names its holder (pid and command) for the refusal's message."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from fleet.master import layout
from fleet.master.text import printable


class BusyError(Exception):
    pass


class NodeLock:
    def __init__(self, node_dir: Path, holder: str = "fleet reinstall",
                 path: Path | None = None) -> None:
        """``path``: another lock of the node's directory than the flow's (the console's)."""
        self.path = layout.lock(node_dir) if path is None else path
        self.holder = holder
        self._fd: int | None = None

    def __enter__(self) -> NodeLock:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, _, command = os.read(fd, 256).decode(errors="replace").strip().partition(" ")
            os.close(fd)
            # what the file says goes to a terminal: digits, and printable text only
            pid = pid if pid.isdigit() else "?"
            command = printable(command, 120) or "fleet reinstall"
            raise BusyError(f"another `{command}` (pid {pid}) is running for "
                            f"{self.path.parent.name} (lock {self.path})") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {self.holder}\n".encode())
        self._fd = fd
        return self

    def keep_across_exec(self) -> None:
        """Let a program this process execs hold the lock (the fd stays open in it)."""
        if self._fd is not None:
            os.set_inheritable(self._fd, True)

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the flock
            self._fd = None
