"""SIGINT and SIGTERM caught for the length of a long verb (reinstall, rollout, the
endpoint): one catcher, so that every verb stops the same way: the first signal is kept
(the exit code is 128 + its number, fleet.exitcodes.for_signal) and starts the verb's own
stop; a further one is only reported, whatever the process inherited."""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType
from typing import Any, Self


class SignalCatcher:
    """SIGINT and SIGTERM caught from ``install()`` to ``restore()``: the first one's number
    is kept and handed to ``_stop``; any further one is only reported (``AGAIN`` says
    what is still going on)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)
    AGAIN = "the node is being left safe first"

    def __init__(self, say: Callable[[str], None] = lambda msg: None,
                 stop: Callable[[int], None] | None = None, again: str | None = None) -> None:
        self.say = say
        self.received: int | None = None  # the first signal's number
        self._old: dict[int, Any] = {}
        self._on_stop = stop
        if again is not None:
            self.AGAIN = again

    @property
    def name(self) -> str | None:
        return signal.Signals(self.received).name if self.received is not None else None

    def install(self) -> Self:
        for sig in self.SIGNALS:
            self._old[sig] = signal.signal(sig, self._handler)
        return self

    def restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:
            self.say(f"{signal.Signals(signum).name} again: already stopping; {self.AGAIN}")
            return
        self.received = signum
        self._stop(signum)

    def __enter__(self) -> Self:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.restore()

    def _stop(self, signum: int) -> None:
        """What the first signal does: ``stop`` given, or a subclass's own."""
        if self._on_stop is None:
            raise NotImplementedError
        self._on_stop(signum)
