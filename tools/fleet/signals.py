"""SIGINT and SIGTERM caught for the length of a long verb (apply, health, power, rollout,
reinstall, the endpoint, burnin run, backup, mkv, the status collector): one catcher, so
that every verb stops the same way: the first signal is kept (the exit code is 128 + its
number, fleet.exitcodes.for_signal) and starts the verb's own stop; a further one is only
reported, whatever the process inherited. The only module that sets a signal handler
(tests/unit/test_architecture.py keeps it so).

A verb with no stop of its own is wrapped in :func:`long_verb`: the first signal raises
:class:`Stopped` where the verb is (its ``finally`` blocks release its locks, a child
process it waits for is killed by ``subprocess.run``), and fleet.cli reports it in one
line, with what the verb says is left, and exits 128 + the signal."""

from __future__ import annotations

import functools
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, Self, TypeVar

Run = TypeVar("Run", bound=Callable[..., Any])


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


class Stopped(BaseException):
    """A long verb ended by a signal (a BaseException: no ``except Exception`` of the verb
    takes it for one of its own failures); ``left``: what the verb leaves behind."""

    def __init__(self, signum: int, left: str) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum, self.left = signum, left

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def _stderr(msg: str) -> None:
    print(f"fleet: {msg}", file=sys.stderr, flush=True)


def long_verb(left: str) -> Callable[[Run], Run]:
    """The decorator of a long verb's ``run(args, ctx)``: the one catcher installed for its
    length; the first SIGINT/SIGTERM raises :class:`Stopped` (``left``: what is left, as the
    operator reads it), a second one is only said on stderr."""
    def wrap(run: Run) -> Run:
        @functools.wraps(run)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            def stop(signum: int) -> None:
                raise Stopped(signum, left)

            if threading.current_thread() is not threading.main_thread():
                return run(*args, **kwargs)  # a verb run in-process off the main thread
            with SignalCatcher(_stderr, stop, again="stopping"):
                return run(*args, **kwargs)
        wrapped.long_verb = left  # type: ignore[attr-defined]
        return wrapped  # type: ignore[return-value]
    return wrap
