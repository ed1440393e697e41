"""How long a BMC call may take and how much of an answer it may read: one definition for
both clients (fleet.bmc.redfish, fleet.bmc.ipmi).

- A **request** (one HTTP exchange, one ipmitool run) ends within its own deadline, from
  the connect to the last byte: the time left is re-armed before every read, so a BMC that
  sends a byte at a time cannot stretch it (a per-read timeout would let it go on for
  ever).
- A **call** (one client method: ``power_state``, ``pxe_boot_now``, ``power_cycle`` ...,
  with all the requests it makes) ends within the call deadline. The outermost method
  sets it, the methods it calls share it, and each request gets the smaller of its own
  deadline and what is left of the call's. So every step that makes one BMC call (the
  reinstall's preflight and power steps, the rollout's reboot) is bounded by it, without
  a timer of its own.
- An answer (a Redfish body, ipmitool's stdout and stderr together) is at most
  MAX_ANSWER bytes; a larger one is refused after reading MAX_ANSWER + 1 bytes.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Concatenate, ParamSpec, Protocol, TypeVar

MAX_ANSWER = 1 << 20  # bytes: Redfish JSON is a few KiB; ipmitool -v prints less
REQUEST_TIMEOUT = 10.0  # seconds: one request, connect to last byte
CALL_TIMEOUT = 60.0  # seconds: one client call, every request it makes


class CallDeadline:
    """The deadline of the client call in progress on this thread (a client is used by
    one thread at a time; a deadline per thread keeps two from sharing one)."""

    def __init__(self, seconds: float = CALL_TIMEOUT) -> None:
        self.seconds = seconds
        self._local = threading.local()

    def left(self) -> float:
        """Seconds left of the call in progress (all of them outside a call)."""
        at: float | None = getattr(self._local, "at", None)
        return self.seconds if at is None else at - time.monotonic()

    @contextmanager
    def call(self) -> Iterator[None]:
        """The outermost call sets the deadline; nested ones share it."""
        if getattr(self._local, "at", None) is not None:
            yield
            return
        self._local.at = time.monotonic() + self.seconds
        try:
            yield
        finally:
            self._local.at = None


class HasDeadline(Protocol):
    @property
    def deadline(self) -> CallDeadline: ...


C = TypeVar("C", bound=HasDeadline)
P = ParamSpec("P")
R = TypeVar("R")


def bounded(method: Callable[Concatenate[C, P], R]) -> Callable[Concatenate[C, P], R]:
    """A client method that runs under its client's call deadline."""

    def run(self: C, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.deadline.call():
            return method(self, *args, **kwargs)

    return functools.update_wrapper(run, method)  # type: ignore[return-value]
